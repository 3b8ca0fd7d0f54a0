// Package backup is the format of lockd's backup files, the body of
// GET /v1/snapshot: a small header saying where and when the state was
// taken, the state machine's snapshot as fsm encodes it, and a SHA-256
// checksum of everything before it. A file checks itself: Read refuses one
// that is truncated, altered, of another kind or of a later format, so a
// damaged backup is found when it is saved or inspected, not when a
// cluster is restored from it.
//
// The package knows nothing of what the state means (fsm does) nor of
// how a cluster is seeded from it (lease.Seed).
package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// Magic opens every backup file.
const Magic = "LOCKDSNP"

// FormatVersion is the version of the layout Write produces and Read reads.
const FormatVersion = 1

// Bounds Read checks before it allocates anything.
const (
	// MaxHeader bounds the encoded header: a few fields, far below it.
	MaxHeader = 64 << 10
	// MaxState bounds the state: one GiB is far above what a node holds
	// in memory at the limits lockd is measured at.
	MaxState = 1 << 30
)

// fixedLen is the length of the parts before the header: the magic, the
// format version and the header's length.
const fixedLen = len(Magic) + 4 + 4

// ErrInvalid is wrapped by every error Read returns for a file that is not
// an intact backup file of a version it reads.
var ErrInvalid = errors.New("backup: not an intact lockd backup file")

// Header says where and when a snapshot was taken.
type Header struct {
	// Index is the Raft index of the last entry the state holds: every
	// fencing token in it is at most Index.
	Index uint64 `json:"index"`
	// Term is the term of the leader that took it.
	Term uint64 `json:"term"`
	// Time is the leader's wall time when it took it.
	Time time.Time `json:"time"`
	// Version is the lockd version of the leader that took it.
	Version string `json:"lockd_version"`
	// Node is the id of that leader.
	Node string `json:"node,omitempty"`
}

// File is a backup file, read and checked.
type File struct {
	Header Header
	// State is the state machine's snapshot (fsm's encoding).
	State []byte
	// Size is the file's length in bytes, and Sum its SHA-256 checksum:
	// the hash of every byte before the checksum itself.
	Size int64
	Sum  [sha256.Size]byte
}

// SumHex returns the checksum in hex, as the X-Lockd-Snapshot-Sha256
// header and the CLI show it.
func (f *File) SumHex() string { return hex.EncodeToString(f.Sum[:]) }

// Write writes a backup file of h and state to w, and returns its length
// and checksum.
func Write(w io.Writer, h Header, state []byte) (int64, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	hb, err := json.Marshal(h)
	if err != nil {
		return 0, sum, fmt.Errorf("backup: encode header: %w", err)
	}
	if len(state) > MaxState {
		return 0, sum, fmt.Errorf("backup: state of %d bytes is over the format's bound of %d", len(state), MaxState)
	}
	hw := &hashWriter{w: w, h: sha256.New()}
	fixed := make([]byte, 0, fixedLen)
	fixed = append(fixed, Magic...)
	fixed = binary.BigEndian.AppendUint32(fixed, FormatVersion)
	if len(hb) > MaxHeader {
		return 0, sum, fmt.Errorf("backup: header of %d bytes is over the format's bound of %d", len(hb), MaxHeader)
	}
	fixed = binary.BigEndian.AppendUint32(fixed, uint32(len(hb))) //nolint:gosec // G115: len(hb) <= MaxHeader, checked above
	parts := [][]byte{fixed, hb, binary.BigEndian.AppendUint64(nil, uint64(len(state))), state}
	for _, p := range parts {
		if _, err := hw.Write(p); err != nil {
			return hw.n, sum, fmt.Errorf("backup: write: %w", err)
		}
	}
	hw.h.Sum(sum[:0])
	if _, err := w.Write(sum[:]); err != nil {
		return hw.n, sum, fmt.Errorf("backup: write: %w", err)
	}
	return hw.n + sha256.Size, sum, nil
}

// Encode returns the backup file of h and state.
func Encode(h Header, state []byte) (*File, []byte, error) {
	var buf bytes.Buffer
	n, sum, err := Write(&buf, h, state)
	if err != nil {
		return nil, nil, err
	}
	return &File{Header: h, State: state, Size: n, Sum: sum}, buf.Bytes(), nil
}

// Read reads a whole backup file from r and checks it: the magic, the
// format version, the lengths, the checksum, and that nothing follows.
// Errors about the file wrap ErrInvalid and say what is wrong; r's own
// read errors are returned wrapped as they are.
func Read(r io.Reader) (*File, error) {
	hr := &hashReader{r: r, h: sha256.New()}
	fixed := make([]byte, fixedLen)
	if err := readFull(hr, fixed, "the start"); err != nil {
		return nil, err
	}
	if string(fixed[:len(Magic)]) != Magic {
		return nil, invalid("it does not start with %q (is it a lockd backup file?)", Magic)
	}
	if v := binary.BigEndian.Uint32(fixed[len(Magic):]); v != FormatVersion {
		return nil, invalid("format version %d; this build reads version %d", v, FormatVersion)
	}
	hlen := binary.BigEndian.Uint32(fixed[len(Magic)+4:])
	if hlen > MaxHeader {
		return nil, invalid("header length %d is over the bound of %d", hlen, MaxHeader)
	}
	hb := make([]byte, hlen)
	if err := readFull(hr, hb, "the header"); err != nil {
		return nil, err
	}
	var slen [8]byte
	if err := readFull(hr, slen[:], "the state's length"); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint64(slen[:])
	if n > MaxState {
		return nil, invalid("state length %d is over the bound of %d", n, MaxState)
	}
	state, err := readState(hr, int64(n))
	if err != nil {
		return nil, err
	}
	f := &File{State: state, Size: hr.n + sha256.Size}
	hr.h.Sum(f.Sum[:0])
	var stored [sha256.Size]byte
	if _, err := io.ReadFull(r, stored[:]); err != nil {
		return nil, short(err, "the checksum")
	}
	if stored != f.Sum {
		return nil, invalid("checksum mismatch: the file says %x, its content hashes to %x (the file was altered or damaged)", stored, f.Sum)
	}
	var extra [1]byte
	if k, err := r.Read(extra[:]); k > 0 {
		return nil, invalid("data after the checksum")
	} else if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("backup: read: %w", err)
	}
	if err := json.Unmarshal(hb, &f.Header); err != nil {
		return nil, invalid("header: %v", err)
	}
	return f, nil
}

// readState reads the state's n bytes, growing the buffer as they come
// rather than trusting the length with one allocation.
func readState(r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, r, n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, invalid("truncated: the state has %d of its %d bytes", got, n)
		}
		return nil, fmt.Errorf("backup: read: %w", err)
	}
	return buf.Bytes(), nil
}

func readFull(r io.Reader, b []byte, what string) error {
	if _, err := io.ReadFull(r, b); err != nil {
		return short(err, what)
	}
	return nil
}

// short describes a read that ended early: the file is truncated.
func short(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("truncated: it ends in %s", what)
	}
	return fmt.Errorf("backup: read: %w", err)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// hashWriter writes through to w and hashes what it wrote.
type hashWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (w *hashWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// hashReader reads from r and hashes what it read.
type hashReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (r *hashReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	return n, err
}
