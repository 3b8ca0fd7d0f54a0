package mux

import (
	"errors"
	"net"
	"os"
)

// Errors returned by the package. Errors from Read, Write and Dial wrap them,
// so test them with errors.Is.
var (
	// ErrClosed: the Mux or the Layer is closed. It also matches
	// net.ErrClosed, so code written for a plain net.Listener recognises it.
	ErrClosed error = closedError{}
	// ErrDropped: a Drop rule refused the dial, the write or the read, or
	// reset the connection.
	ErrDropped = errors.New("mux: dropped by fault rule")
	// ErrBadNodeID: the node ID given to New is empty or longer than
	// MaxNodeIDLen bytes, so it cannot be sent in a connection header.
	ErrBadNodeID = errors.New("mux: node ID must be 1 to 255 bytes")
)

// Errors that only reach the debug log, when an accepted connection is
// turned away before any Layer sees it.
var (
	errUnknownProto = errors.New("mux: no layer for protocol byte")
	errBadVersion   = errors.New("mux: unsupported header version")
	errBadHeader    = errors.New("mux: malformed header")
	errHandshake    = errors.New("mux: TLS handshake failed")
	errPeerName     = errors.New("mux: peer certificate does not match")
)

// closedError is ErrClosed's type: a message of its own that still matches
// net.ErrClosed.
type closedError struct{}

func (closedError) Error() string        { return "mux: closed" }
func (closedError) Is(target error) bool { return target == net.ErrClosed }

// timeoutError is what a dial into a blackhole fails with once its timeout
// has passed. Like a real connect timeout it is a net.Error whose Timeout
// reports true, and it matches os.ErrDeadlineExceeded.
type timeoutError struct{}

func (timeoutError) Error() string        { return "mux: dial timed out (blackholed by fault rule)" }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Temporary() bool      { return true }
func (timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }
