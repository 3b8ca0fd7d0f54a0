package mux

import (
	"fmt"
	"io"
	"net"
)

// Protocol bytes: the first byte of every connection. They are assigned
// here, in one place, so that two packages cannot pick the same byte.
const (
	// ProtoRaft carries hashicorp/raft's NetworkTransport.
	ProtoRaft byte = 1
	// ProtoRing carries the classic ring elector.
	ProtoRing byte = 2
	// ProtoBully carries the classic bully elector.
	ProtoBully byte = 3
	// ProtoInvitation carries the classic invitation elector.
	ProtoInvitation byte = 4
	// ProtoLease carries lockd's lease exchange: a leader's questions to the
	// followers about their promises not to vote, and their answers.
	ProtoLease byte = 5
	// ProtoForward carries API requests a follower forwards to the leader,
	// and the answers (internal/peerhttp).
	ProtoForward byte = 6
	// ProtoEmergent carries the classic emergent elector.
	ProtoEmergent byte = 7
)

// MaxNodeIDLen is the longest node ID, in bytes, that fits the one-byte
// length of the connection header.
const MaxNodeIDLen = 255

// headerVersion is the version byte that follows the protocol byte. An
// acceptor closes connections with any other version, so the header can
// change later without being misread.
const headerVersion = 1

// The connection header, written by the dialer before any protocol data:
//
//	proto   1 byte   selects the Layer
//	version 1 byte   headerVersion
//	idLen   1 byte   1..MaxNodeIDLen
//	id      idLen    the dialing node's ID
//
// It is written in one Write so that it travels in one segment.

// validNodeID reports whether id can be sent in a header.
func validNodeID(id string) bool {
	return len(id) > 0 && len(id) <= MaxNodeIDLen
}

// writeHeader sends the header for proto and id on c, under the deadline
// the caller has set. It sends nothing and returns ErrBadNodeID for an ID
// the header cannot carry: its length byte would wrap, and the acceptor
// would read another ID and take the rest of it for protocol data.
func writeHeader(c net.Conn, proto byte, id string) error {
	if !validNodeID(id) {
		return ErrBadNodeID
	}
	buf := make([]byte, 0, 3+len(id))
	buf = append(buf, proto, headerVersion, byte(len(id))) //nolint:gosec // G115: validNodeID bounds len(id) to MaxNodeIDLen, 255
	buf = append(buf, id...)
	_, err := c.Write(buf)
	return err
}

// readProto reads the protocol byte.
func readProto(r io.Reader) (byte, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// readNodeID reads the rest of the header, after the protocol byte, and
// returns the dialer's node ID.
func readNodeID(r io.Reader) (string, error) {
	var b [2]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	if b[0] != headerVersion {
		return "", fmt.Errorf("%w: %d", errBadVersion, b[0])
	}
	if b[1] == 0 {
		return "", fmt.Errorf("%w: empty node ID", errBadHeader)
	}
	id := make([]byte, b[1])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", err
	}
	return string(id), nil
}
