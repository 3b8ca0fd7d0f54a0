package mux

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// delayCase is one way of delaying a's messages to b: a rule on a's Out
// side, on b's In side, or both at once (then each message is held twice).
type delayCase struct {
	name  string
	set   func(p *pair, d time.Duration)
	heal  func(p *pair)
	times int // how many times D a message is held
	// holder returns the line that holds a's bytes first.
	holder func(aEnd, bEnd *Conn) *line
}

var delayCases = []delayCase{
	{"a out", func(p *pair, d time.Duration) { p.a.Faults().SetDelay("b", Out, d) },
		func(p *pair) { p.a.Faults().Heal("b") }, 1, outLine},
	{"b in", func(p *pair, d time.Duration) { p.b.Faults().SetDelay("a", In, d) },
		func(p *pair) { p.b.Faults().Heal("a") }, 1, inLine},
	{"both sides", func(p *pair, d time.Duration) {
		p.a.Faults().SetDelay("b", Both, d)
		p.b.Faults().SetDelay("a", Both, d)
	}, func(p *pair) { p.a.Faults().HealAll(); p.b.Faults().HealAll() }, 2, outLine},
}

func outLine(aEnd, _ *Conn) *line { return aEnd.out.Load() }
func inLine(_, bEnd *Conn) *line  { return bEnd.in.Load() }

// waitLine waits until the line holder returns holds held bytes and has
// lost lost bytes: bytes a peer writes reach the other end's In rule only
// when they arrive.
func waitLine(t *testing.T, holder func() *line, held int, lost int64) {
	t.Helper()
	waitFor(t, "the delay line to take the bytes", func() bool {
		l := holder()
		if l == nil {
			return false
		}
		h, n := lineState(l)
		return h == held && n == lost
	})
}

// lineState returns how many bytes l holds and has lost.
func lineState(l *line) (held int, lost int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.lost.Load()
}

// stamped is a message of a stream of numbered frames and when it was
// written or read.
type stamped struct {
	seq uint32
	at  time.Time
}

// sendNumbered writes frames 0..n-1 to c, 4 bytes each, one Write per frame
// and pause between them, and returns when each Write was called.
func sendNumbered(t *testing.T, c net.Conn, n int, pause time.Duration) []time.Time {
	t.Helper()
	sent := make([]time.Time, n)
	var frame [4]byte
	for i := range n {
		binary.BigEndian.PutUint32(frame[:], uint32(i))
		sent[i] = time.Now()
		mustWrite(t, c, string(frame[:]))
		if pause > 0 {
			time.Sleep(pause)
		}
	}
	return sent
}

// receiveNumbered reads n frames from c in a goroutine, stamping each when
// its last byte was read.
func receiveNumbered(c net.Conn, n int) <-chan []stamped {
	done := make(chan []stamped, 1)
	go func() {
		var got []stamped
		defer func() { done <- got }()
		if c.SetReadDeadline(time.Now().Add(4*testTimeout)) != nil {
			return
		}
		var frame [4]byte
		for range n {
			if _, err := io.ReadFull(c, frame[:]); err != nil {
				return
			}
			got = append(got, stamped{binary.BigEndian.Uint32(frame[:]), time.Now()})
		}
	}()
	return done
}

// mustReceiveInOrder checks that got is frames 0..len(sent)-1 in order,
// each read no earlier than minDelay after it was written.
func mustReceiveInOrder(t *testing.T, got []stamped, sent []time.Time, minDelay time.Duration) {
	t.Helper()
	if len(got) != len(sent) {
		t.Fatalf("received %d frames, want %d", len(got), len(sent))
	}
	for i, g := range got {
		if g.seq != uint32(i) {
			t.Fatalf("frame %d is number %d: order not kept", i, g.seq)
		}
		if d := g.at.Sub(sent[i]); d < minDelay {
			t.Fatalf("frame %d arrived %v after it was written, want at least %v", i, d, minDelay)
		}
	}
}

// TestFaults_Delay_HoldsEachMessage checks, on a connection opened before
// the rule and on one opened after, that every message arrives no earlier
// than the delay after it was written, in order, whichever side holds it.
func TestFaults_Delay_HoldsEachMessage(t *testing.T) {
	const d = 200 * time.Millisecond
	for _, tc := range delayCases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNewPair(t)
			before, beforeB := p.mustConnectAB(t)
			tc.set(p, d)
			after, afterB := p.mustConnectAB(t)
			for _, conn := range []struct {
				name string
				a, b net.Conn
			}{{"open before the rule", before, beforeB}, {"opened under the rule", after, afterB}} {
				const n = 10
				got := receiveNumbered(conn.b, n)
				sent := sendNumbered(t, conn.a, n, 20*time.Millisecond)
				if g := <-got; len(g) != n {
					t.Fatalf("%s: received %d frames, want %d", conn.name, len(g), n)
				} else {
					mustReceiveInOrder(t, g, sent, time.Duration(tc.times)*d)
				}
			}
		})
	}
}

// TestFaults_Delay_ReadAlreadyBlocked checks that bytes returned to a Read
// that was blocked before an In Delay was set are held too.
func TestFaults_Delay_ReadAlreadyBlocked(t *testing.T) {
	const d = 200 * time.Millisecond
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)
	data, _ := readChunks(bEnd)
	mustWrite(t, aEnd, "before")
	mustReceive(t, data, "before")
	waitBlockedIn(t, "(*Conn).Read")

	p.b.Faults().SetDelay("a", In, d)
	written := time.Now()
	mustWrite(t, aEnd, "held")
	mustReceive(t, data, "held")
	if got := time.Since(written); got < d {
		t.Errorf("message read %v after it was written, want at least %v", got, d)
	}
}

// TestFaults_Delay_KeepsOrderAcrossRuleChanges writes many small frames
// while the delay changes, is healed and is set again: none is lost and
// the order holds, though later frames get shorter delays than earlier ones.
func TestFaults_Delay_KeepsOrderAcrossRuleChanges(t *testing.T) {
	for _, tc := range delayCases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNewPair(t)
			aEnd, bEnd := p.mustConnectAB(t)
			const n = 3000
			got := receiveNumbered(bEnd, n)
			var sent []time.Time
			for i, step := range []func(){
				func() { tc.set(p, 150*time.Millisecond) },
				func() { tc.set(p, 10*time.Millisecond) },
				func() { tc.heal(p) },
				func() { tc.set(p, 100*time.Millisecond) },
				func() { tc.heal(p) },
			} {
				step()
				var frame [4]byte
				for j := range n / 5 {
					binary.BigEndian.PutUint32(frame[:], uint32(i*n/5+j))
					sent = append(sent, time.Now())
					mustWrite(t, aEnd, string(frame[:]))
				}
			}
			mustReceiveInOrder(t, <-got, sent, 0)
		})
	}
}

// TestFaults_Delay_HealReleases checks that bytes held when the rule is
// healed are still delivered at their time and ahead of later ones, and
// that after the heal new bytes are not held.
func TestFaults_Delay_HealReleases(t *testing.T) {
	for _, tc := range delayCases {
		t.Run(tc.name, func(t *testing.T) {
			const d = 300 * time.Millisecond
			p := mustNewPair(t)
			aEnd, bEnd := p.mustConnectAB(t)

			tc.set(p, d)
			written := time.Now()
			mustWrite(t, aEnd, "held")
			waitLine(t, func() *line { return tc.holder(aEnd, bEnd) }, len("held"), 0)
			tc.heal(p)
			mustWrite(t, aEnd, "free")
			mustRead(t, bEnd, "held")
			if got := time.Since(written); got < d {
				t.Errorf("held message read %v after it was written, want at least %v", got, d)
			}
			mustRead(t, bEnd, "free")

			// A delay far longer than the test's timeout, healed before
			// anything is written, holds nothing.
			tc.set(p, time.Minute)
			tc.heal(p)
			mustWrite(t, aEnd, "next")
			mustRead(t, bEnd, "next")
		})
	}
}

// TestFaults_Delay_BlackholeWins checks that a Blackhole set in a direction
// loses the bytes a Delay still holds there, and that a Delay set on a
// blackholed direction does not bring back what the Blackhole lost.
func TestFaults_Delay_BlackholeWins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      func(p *pair) *Faults
		peer   string
		dir    Direction
		holder func(aEnd, bEnd *Conn) *line
	}{
		{"a out", func(p *pair) *Faults { return p.a.Faults() }, "b", Out, outLine},
		{"b in", func(p *pair) *Faults { return p.b.Faults() }, "a", In, inLine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNewPair(t)
			aEnd, bEnd := p.mustConnectAB(t)
			data, _ := readChunks(bEnd)
			f := tc.f(p)
			holder := func() *line { return tc.holder(aEnd, bEnd) }

			f.SetDelay(tc.peer, tc.dir, 200*time.Millisecond)
			mustWrite(t, aEnd, "held")
			waitLine(t, holder, len("held"), 0)
			f.Set(tc.peer, tc.dir, Blackhole)
			if held, lost := lineState(holder()); held != 0 || lost != int64(len("held")) {
				t.Fatalf("after Set(Blackhole) the line holds %d bytes and lost %d, want 0 and %d",
					held, lost, len("held"))
			}
			mustWrite(t, aEnd, "lost")
			if tc.dir == In { // an Out Blackhole loses bytes before any line
				waitLine(t, holder, 0, int64(len("heldlost")))
			}
			f.SetDelay(tc.peer, tc.dir, 10*time.Millisecond)
			select {
			case s := <-data:
				t.Fatalf("read %q: bytes held or lost by the blackhole were delivered", s)
			case <-time.After(200*time.Millisecond + quiet):
			}
			f.Heal(tc.peer)
			mustWrite(t, aEnd, "next")
			mustReceive(t, data, "next")
		})
	}
}

// TestFaults_BlackholeIn_LosesBytesNobodyReads checks that bytes arriving
// under an In Blackhole are lost even when no Read is waiting for them, so
// that healing does not deliver them.
func TestFaults_BlackholeIn_LosesBytesNobodyReads(t *testing.T) {
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)
	p.b.Faults().Set("a", In, Blackhole)
	mustWrite(t, aEnd, "lost")
	waitFor(t, "b to receive and lose the bytes", func() bool {
		l := bEnd.in.Load()
		return l != nil && l.lost.Load() == int64(len("lost"))
	})
	p.b.Faults().Heal("a")
	mustWrite(t, aEnd, "ok")
	mustRead(t, bEnd, "ok")
}

// TestFaults_Delay_BoundedOut checks that a writer that outruns an Out
// Delay blocks once the line is full, rather than growing it.
func TestFaults_Delay_BoundedOut(t *testing.T) {
	p := mustNewPair(t)
	aEnd, _ := p.mustConnectAB(t)
	p.a.Faults().SetDelay("b", Out, time.Minute)
	if err := aEnd.SetWriteDeadline(time.Now().Add(quiet)); err != nil {
		t.Fatalf("set write deadline: %v", err)
	}
	n, err := aEnd.Write(make([]byte, 4*lineLimit))
	if !isTimeout(err) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write into a full line: %d, %v; want a timeout", n, err)
	}
	if n < lineLimit || n > lineLimit+lineChunk {
		t.Errorf("Write queued %d bytes, want between %d and %d", n, lineLimit, lineLimit+lineChunk)
	}
}

// TestFaults_Delay_BoundedIn checks that an In Delay stops reading the
// socket once its line is full, whatever the peer sends.
func TestFaults_Delay_BoundedIn(t *testing.T) {
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)
	p.b.Faults().SetDelay("a", In, time.Minute)
	go func() {
		_ = aEnd.SetWriteDeadline(time.Now().Add(testTimeout))
		_, _ = aEnd.Write(make([]byte, 16*lineLimit)) // blocks on TCP flow control
	}()
	held := func() int {
		h, _ := lineState(bEnd.in.Load())
		return h
	}
	waitFor(t, "b's line to fill", func() bool { return held() >= lineLimit })
	time.Sleep(quiet) // the pump must stay stopped
	if h := held(); h > lineLimit+lineChunk {
		t.Errorf("b's line holds %d bytes, want at most %d", h, lineLimit+lineChunk)
	}
}

// TestFaults_Delay_DeadlinesStillApply checks that a read deadline ends a
// Read that waits for held bytes, which stay held for the next Read.
func TestFaults_Delay_DeadlinesStillApply(t *testing.T) {
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)
	p.b.Faults().SetDelay("a", In, 500*time.Millisecond)
	mustWrite(t, aEnd, "slow")
	if err := bEnd.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatalf("set read deadline: %v", err)
	}
	if n, err := bEnd.Read(make([]byte, 8)); !isTimeout(err) {
		t.Fatalf("Read before the delay passed: %d, %v; want a timeout", n, err)
	}
	mustRead(t, bEnd, "slow")
}

// TestFaults_Delay_CloseStopsGoroutines checks that closing delayed
// connections, with bytes still held both ways, ends every goroutine they
// started.
func TestFaults_Delay_CloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	p := mustNewPair(t)
	p.a.Faults().SetDelay("b", Both, time.Minute)
	p.b.Faults().SetDelay("a", Both, time.Minute)
	var conns []*Conn
	for range 3 {
		aEnd, bEnd := p.mustConnectAB(t)
		mustWrite(t, aEnd, "held")
		mustWrite(t, bEnd, "held")
		conns = append(conns, aEnd, bEnd)
	}
	for _, c := range conns {
		if c.in.Load() == nil || c.out.Load() == nil {
			t.Fatalf("connection with %s has no line in one direction: nothing to stop", c.RemoteID())
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	_ = p.a.Close()
	_ = p.b.Close()
	waitFor(t, "the connections' goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
