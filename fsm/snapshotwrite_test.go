package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
)

// wholeSnapshot is the snapshot of v encoded as one value: snapshotFile
// filled from the view and given to json.Marshal. WriteTo must write
// these bytes.
func wholeSnapshot(t testing.TB, v *View) []byte {
	t.Helper()
	file := snapshotFile{
		Version:         snapshotVersion,
		AppliedIndex:    v.applied,
		LocksIndex:      v.locksIndex,
		ElectionsIndex:  v.electionsIndex,
		Sessions:        v.sessions.sortedValues(),
		Locks:           []Lock{},
		Elections:       []Lock{},
		Members:         v.members,
		ACLTokens:       v.tokens,
		ACLBootstrapped: v.bootstrapped,
		kvFile:          kvFile{KVIndex: v.kv.index, KVSeq: v.kv.seq, KVCompacted: v.kv.compacted},
	}
	for _, l := range v.locks.sortedValues() {
		file.Locks = append(file.Locks, *l)
	}
	for _, l := range v.elections.sortedValues() {
		file.Elections = append(file.Elections, *l)
	}
	file.Seqs, file.SeqFloors = v.seqFiles()
	v.kv.tree.Ascend(func(kv *KV) bool {
		file.KVs = append(file.KVs, *kv)
		return true
	})
	v.kv.events.Ascend(func(e *histEvent) bool {
		file.KVEvents = append(file.KVEvents, e.stored())
		return true
	})
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestView_WriteToIsTheFileEncoded: after every entry of the seed log
// (sessions with request numbers and floors, locks, elections, members,
// keys, ephemeral and sequential keys, the history, tokens with limits),
// WriteTo writes exactly what json.Marshal gives for the whole
// snapshotFile, counts it, and it restores.
func TestView_WriteToIsTheFileEncoded(t *testing.T) {
	h := newHarness(t)
	for i, c := range seedLog() {
		h.apply(c)
		v := h.f.View()
		var b bytes.Buffer
		n, err := v.WriteTo(&b)
		if err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
		if want := wholeSnapshot(t, v); !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("entry %d: WriteTo wrote\n%s\nthe file encoded whole is\n%s", i+1, b.Bytes(), want)
		}
		if n != int64(b.Len()) {
			t.Fatalf("entry %d: WriteTo counted %d bytes, wrote %d", i+1, n, b.Len())
		}
		mustRestore(t, b.Bytes())
	}
	var file snapshotFile
	if err := json.Unmarshal(mustSnapshot(t, h.f), &file); err != nil {
		t.Fatal(err)
	}
	if len(file.KVs) == 0 || len(file.KVEvents) == 0 || len(file.ACLTokens) == 0 || len(file.Seqs) == 0 || len(file.SeqFloors) == 0 || len(file.Elections) == 0 {
		t.Fatalf("the seed log leaves a part of the format empty: %+v", file)
	}
}

// recordingWriter records the size of each write and fails the one
// numbered failAt (from 1), if any.
type recordingWriter struct {
	writes  []int
	total   int
	failAt  int
	failErr error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	if len(w.writes) == w.failAt {
		return 0, w.failErr
	}
	w.total += len(p)
	return len(p), nil
}

// bigState is a state of n keys of 1 KiB.
func bigState(t testing.TB, n int) *FSM {
	t.Helper()
	h := newHarness(t)
	value := bytes.Repeat([]byte("v"), 1024)
	for i := 0; i < n; i += 100 {
		var ops []TxnOp
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, Put(fmt.Appendf(nil, "big/%06d", j), value))
		}
		h.mustApply(txn(Txn{Success: ops}))
	}
	return h.f
}

// TestView_WriteToStreams: a state of several MiB reaches the writer in
// pieces no larger than WriteTo's buffer, not as one buffer of the whole.
func TestView_WriteToStreams(t *testing.T) {
	f := bigState(t, 4000)
	var w recordingWriter
	n, err := f.View().WriteTo(&w)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(w.total) || n < 4000*1024 {
		t.Fatalf("WriteTo counted %d bytes; the writer took %d", n, w.total)
	}
	for i, size := range w.writes {
		if size > snapshotBuffer {
			t.Fatalf("write %d of %d is %d bytes, more than the buffer's %d", i+1, len(w.writes), size, snapshotBuffer)
		}
	}
	if len(w.writes) < int(n)/snapshotBuffer {
		t.Fatalf("%d bytes in %d writes", n, len(w.writes))
	}
}

// TestView_WriteToStopsAtTheWritersError: the writer's error is returned,
// wrapped, and nothing is written after it.
func TestView_WriteToStopsAtTheWritersError(t *testing.T) {
	f := bigState(t, 1000)
	boom := errors.New("disk full")
	w := recordingWriter{failAt: 2, failErr: boom}
	if _, err := f.View().WriteTo(&w); !errors.Is(err, boom) {
		t.Fatalf("WriteTo: %v, want %v", err, boom)
	}
	if len(w.writes) != 2 {
		t.Fatalf("%d writes; the second failed and should have been the last", len(w.writes))
	}
}

// BenchmarkSnapshot encodes a state of 20,000 keys of 1 KiB (about 28 MiB
// of JSON) to io.Discard: "stream" as Persist does (WriteTo), "whole" as
// one json.Marshal of the file, which is how snapshots were written
// before WriteTo.
func BenchmarkSnapshot(b *testing.B) {
	v := bigState(b, 20000).View()
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := io.Discard.Write(wholeSnapshot(b, v)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
