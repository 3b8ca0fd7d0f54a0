package fsm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// snapshotBuffer is the size of the buffer WriteTo encodes into before it
// writes to its writer.
const snapshotBuffer = 256 << 10

// Marshal encodes the view in the snapshot format Restore reads: the bytes
// WriteTo writes.
func (v *View) Marshal() ([]byte, error) {
	var b bytes.Buffer
	if _, err := v.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteTo writes the view to w in the snapshot format Restore reads: the
// JSON encoding of snapshotFile, byte for byte, written one object (a
// session, a lock, a key, an event) at a time through a small buffer.
// Encoding the state as one value would build it all in one buffer that
// grows by doubling, up to twice the snapshot's size, and leave that
// buffer in encoding/json's pool; the garbage collector's work on it
// stops every goroutine of the node, Raft's heartbeats and the master
// lease among them, for as long as a large snapshot takes.
func (v *View) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	e := &objectWriter{w: bufio.NewWriterSize(cw, snapshotBuffer)}
	e.open()
	e.field("version", snapshotVersion)
	e.field("applied_index", v.applied)
	e.field("locks_index", v.locksIndex)
	e.field("elections_index", v.electionsIndex)
	array(e, "sessions", sortedSeq(v.sessions))
	array(e, "locks", derefSeq(sortedSeq(v.locks)))
	array(e, "elections", derefSeq(sortedSeq(v.elections)))
	array(e, "members", slices.Values(v.members))
	seqs, floors := v.seqFiles()
	if len(seqs) > 0 {
		e.field("seqs", seqs)
	}
	if len(floors) > 0 {
		e.field("seq_floors", floors)
	}
	if len(v.tokens) > 0 {
		array(e, "acl_tokens", slices.Values(v.tokens))
	}
	if v.bootstrapped {
		e.field("acl_bootstrapped", true)
	}
	v.kv.writeTo(e)
	e.close()
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("fsm: snapshot: %w", e.err)
	}
	return cw.n, nil
}

// seqFiles returns the request numbers and floors of the sessions that
// have any, as snapshotFile holds them.
func (v *View) seqFiles() (seqs map[string]map[string]uint64, floors map[string]uint64) {
	for id, t := range v.seqs.all() {
		if len(t.last) > 0 {
			seqs = setKey(seqs, id, t.last)
		}
		if t.floor > 0 {
			floors = setKey(floors, id, t.floor)
		}
	}
	return seqs, floors
}

// writeTo writes kvFile's fields of the frozen namespace.
func (v kvView) writeTo(e *objectWriter) {
	if v.index != 0 {
		e.field("kv_index", v.index)
	}
	if v.seq != 0 {
		e.field("kv_seq", v.seq)
	}
	if v.tree.Len() > 0 {
		array(e, "kvs", func(yield func(*KV) bool) { v.tree.Ascend(yield) })
	}
	if v.events.Len() > 0 {
		array(e, "kv_events", func(yield func(storedEvent) bool) {
			v.events.Ascend(func(h *histEvent) bool { return yield(h.stored()) })
		})
	}
	if v.compacted != 0 {
		e.field("kv_compacted", v.compacted)
	}
}

// stored is the event as a snapshot holds it.
func (h *histEvent) stored() storedEvent {
	return storedEvent{Index: h.index, At: h.at, Type: h.typ, KV: h.kv, Prev: h.prev}
}

// sortedSeq yields the values of m in key order.
func sortedSeq[V any](m *cowMap[V]) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, k := range m.sortedKeys() {
			v, _ := m.get(k)
			if !yield(v) {
				return
			}
		}
	}
}

// derefSeq yields the values seq points to.
func derefSeq[V any](seq func(func(*V) bool)) func(func(V) bool) {
	return func(yield func(V) bool) {
		seq(func(p *V) bool { return yield(*p) })
	}
}

// objectWriter writes one JSON object field by field, encoding each value
// with encoding/json, so that the whole is what json.Marshal would give
// for a struct with the same fields in the same order. The first error
// sticks; later calls do nothing.
type objectWriter struct {
	w      *bufio.Writer
	enc    *json.Encoder // writes through a lineDropper to w
	err    error
	fields int
}

// lineDropper writes what a json.Encoder writes, less the newline that
// ends each value: the encoder writes each value, and its newline, in one
// Write, from its own buffer, so a value is encoded without the copy
// json.Marshal returns. (TestView_WriteToIsTheFileEncoded holds the result
// to json.Marshal's bytes.)
type lineDropper struct{ w *bufio.Writer }

func (d lineDropper) Write(p []byte) (int, error) {
	v, ok := bytes.CutSuffix(p, []byte{'\n'})
	if !ok {
		return 0, errors.New("a JSON value not ended by a newline")
	}
	if _, err := d.w.Write(v); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (e *objectWriter) open()  { e.raw("{") }
func (e *objectWriter) close() { e.raw("}") }

func (e *objectWriter) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *objectWriter) value(v any) {
	if e.err != nil {
		return
	}
	if e.enc == nil {
		e.enc = json.NewEncoder(lineDropper{e.w})
	}
	e.err = e.enc.Encode(v)
}

func (e *objectWriter) key(name string) {
	if e.fields > 0 {
		e.raw(",")
	}
	e.fields++
	e.raw(`"` + name + `":`)
}

func (e *objectWriter) field(name string, v any) {
	e.key(name)
	e.value(v)
}

// array writes a field whose value is the array of what seq yields, in
// its order.
func array[V any](e *objectWriter, name string, seq func(func(V) bool)) {
	e.key(name)
	e.raw("[")
	n := 0
	seq(func(v V) bool {
		if n > 0 {
			e.raw(",")
		}
		n++
		e.value(v)
		return e.err == nil
	})
	e.raw("]")
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
