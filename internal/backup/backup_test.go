package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

var testHeader = Header{Index: 4242, Term: 7, Time: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC), Version: "v1.2.3", Node: "n2"}

func mustEncode(t *testing.T, state string) []byte {
	t.Helper()
	_, b, err := Encode(testHeader, []byte(state))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRead_RoundTrip(t *testing.T) {
	for _, state := range []string{"", `{"version":4}`, strings.Repeat("x", 100_000)} {
		b := mustEncode(t, state)
		f, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("state of %d bytes: %v", len(state), err)
		}
		if f.Header != testHeader || string(f.State) != state || f.Size != int64(len(b)) {
			t.Fatalf("read %+v, %d state bytes, size %d; wrote %+v, %d, %d", f.Header, len(f.State), f.Size, testHeader, len(state), len(b))
		}
		if want := sha256.Sum256(b[:len(b)-sha256.Size]); f.Sum != want || !bytes.Equal(b[len(b)-sha256.Size:], want[:]) {
			t.Fatalf("sum %x; the file's first %d bytes hash to %x", f.Sum, len(b)-sha256.Size, want)
		}
		// A reader that returns one byte at a time reads the same.
		if g, err := Read(iotest.OneByteReader(bytes.NewReader(b))); err != nil || g.Sum != f.Sum {
			t.Fatalf("one byte at a time: %v", err)
		}
	}
}

func TestRead_StartsWithMagicAndVersion(t *testing.T) {
	b := mustEncode(t, "s")
	if !bytes.HasPrefix(b, []byte("LOCKDSNP")) || binary.BigEndian.Uint32(b[8:]) != FormatVersion {
		t.Fatalf("file starts %q", b[:12])
	}
}

func TestRead_RefusesEveryTruncation(t *testing.T) {
	b := mustEncode(t, `{"version":4,"sessions":[]}`)
	for n := range len(b) {
		_, err := Read(bytes.NewReader(b[:n]))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("first %d of %d bytes: %v; want a truncation error", n, len(b), err)
		}
	}
}

func TestRead_RefusesEveryFlippedByte(t *testing.T) {
	b := mustEncode(t, `{"version":4,"sessions":[]}`)
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x01
		if _, err := Read(bytes.NewReader(c)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("byte %d flipped: %v; want ErrInvalid", i, err)
		}
	}
}

func TestRead_SaysWhatIsWrong(t *testing.T) {
	good := mustEncode(t, "state")
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"wrong magic", with(func(b []byte) []byte { copy(b, "NOTLOCKD"); return b }), `does not start with "LOCKDSNP"`},
		{"a JSON file", []byte(`{"version":4,"sessions":[]}`), `does not start with "LOCKDSNP"`},
		{"later version", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 2); return b }), "format version 2"},
		{"huge header", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[12:], MaxHeader+1); return b }), "header length"},
		{"flipped state byte", with(func(b []byte) []byte { b[len(b)-sha256.Size-1] ^= 0x20; return b }), "checksum mismatch"},
		{"flipped checksum byte", with(func(b []byte) []byte { b[len(b)-1] ^= 0x20; return b }), "checksum mismatch"},
		{"cut in the checksum", good[:len(good)-3], "truncated: it ends in the checksum"},
		{"cut in the state", good[:len(good)-sha256.Size-2], "truncated: the state has 3 of its 5 bytes"},
		{"data after", append(bytes.Clone(good), '\n'), "data after the checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.file))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func TestRead_HugeStateLengthAllocatesNothing(t *testing.T) {
	b := mustEncode(t, "")
	stateLen := len(b) - sha256.Size - 8
	binary.BigEndian.PutUint64(b[stateLen:], MaxState) // claims a GiB, has none
	_, err := Read(bytes.NewReader(b[:len(b)-sha256.Size]))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("err %v", err)
	}
	binary.BigEndian.PutUint64(b[stateLen:], MaxState+1)
	if _, err := Read(bytes.NewReader(b)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "over the bound") {
		t.Fatalf("err %v", err)
	}
}

func TestRead_PassesReadErrorsOn(t *testing.T) {
	b := mustEncode(t, "state")
	boom := errors.New("disk on fire")
	_, err := Read(&failingReader{b: b[:len(b)/2], err: boom})
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v; want the reader's own error, not a bad file", err)
	}
}

// failingReader reads b, then fails with err.
type failingReader struct {
	b   []byte
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, r.err
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
