package mux

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

func TestFaults_DropOut(t *testing.T) {
	p := mustNewPair(t)
	abA, abB := p.mustConnectAB(t)
	baA, baB := p.mustConnectBA(t)

	p.a.Faults().Set("b", Out, Drop)

	// Every open connection with b is reset, whoever dialed it.
	for _, c := range []*Conn{abA, abB, baA, baB} {
		mustBeClosed(t, c)
	}
	// New dials to b are refused, not left to time out: with a dial
	// timeout of a minute, the refusal (ErrDropped) comes before it.
	start := time.Now()
	if _, err := p.la.Dial(p.b.Addr().String(), time.Minute); !errors.Is(err, ErrDropped) {
		t.Fatalf("Dial under Drop Out: %v, want ErrDropped", err)
	}
	if elapsed := time.Since(start); elapsed >= time.Minute {
		t.Errorf("Dial under Drop Out waited out its timeout (%v)", elapsed)
	}

	if got := p.a.Faults().Refused()["b"]; got != (Refused{Dials: 1}) {
		t.Errorf("Refused()[b] = %+v after one refused dial, want 1 dial", got)
	}

	p.a.Faults().Heal("b")
	aEnd, bEnd := p.mustConnectAB(t)
	mustWrite(t, aEnd, "healed")
	mustRead(t, bEnd, "healed")
	if got := p.a.Faults().Refused()["b"]; got != (Refused{Dials: 1}) {
		t.Errorf("Refused()[b] = %+v after a healed dial, want still 1 dial", got)
	}
}

func TestFaults_DropIn(t *testing.T) {
	p := mustNewPair(t)
	abA, abB := p.mustConnectAB(t)

	p.a.Faults().Set("b", In, Drop)
	mustBeClosed(t, abA)
	mustBeClosed(t, abB)

	// b's dial gets through TCP and its header is sent, but a closes the
	// connection right after reading it and never hands it to its layer.
	refused := mustDial(t, p.lb, p.a.Addr().String())
	mustBeClosed(t, refused)
	waitFor(t, "a to count the refused accept", func() bool { return p.a.Faults().Refused()["b"] == Refused{Accepts: 1} })

	// a may still dial b and be heard, but b's answers are dropped.
	aEnd, bEnd := p.mustConnectAB(t)
	mustWrite(t, aEnd, "to b")
	mustRead(t, bEnd, "to b")
	mustWrite(t, bEnd, "to a")
	if _, err := aEnd.Read(make([]byte, 8)); !errors.Is(err, ErrDropped) {
		t.Errorf("Read under Drop In: %v, want ErrDropped", err)
	}

	p.a.Faults().Heal("b")
	aEnd, bEnd = p.mustConnectBA(t)
	mustWrite(t, bEnd, "healed")
	mustRead(t, aEnd, "healed")
}

func TestFaults_BlackholeOut(t *testing.T) {
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)

	p.a.Faults().Set("b", Out, Blackhole)
	mustWrite(t, aEnd, "lost") // reports success
	mustReadNothing(t, bEnd)

	// A dial hangs for its timeout, then fails like a connect timeout.
	const dialTimeout = 150 * time.Millisecond
	start := time.Now()
	_, err := p.la.Dial(p.b.Addr().String(), dialTimeout)
	if !isTimeout(err) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Dial under Blackhole Out: %v, want a timeout", err)
	}
	if elapsed := time.Since(start); elapsed < dialTimeout {
		t.Errorf("Dial failed after %v, before its timeout of %v", elapsed, dialTimeout)
	}

	p.a.Faults().Heal("b")
	mustWrite(t, aEnd, "ok")
	mustRead(t, bEnd, "ok")
}

func TestFaults_BlackholeOut_DialWaitsForHeal(t *testing.T) {
	p := mustNewPair(t)
	f := p.a.Faults()
	f.Set("b", Out, Blackhole)

	dialed := make(chan error, 1)
	go func() {
		c, err := p.la.Dial(p.b.Addr().String(), testTimeout)
		if err == nil {
			err = c.Close()
		}
		dialed <- err
	}()
	waitFor(t, "the dial to wait in the blackhole", func() bool { return f.dialWaiters.Load() == 1 })
	f.Heal("b")
	select {
	case err := <-dialed:
		if err != nil {
			t.Fatalf("Dial after Heal: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("Dial did not return after Heal")
	}
	mustAccept(t, p.lb)
}

func TestFaults_BlackholeIn(t *testing.T) {
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)

	p.b.Faults().Set("a", In, Blackhole)
	mustWrite(t, aEnd, "lost")
	mustReadNothing(t, bEnd) // the read deadline ends the wait
	if n, err := bEnd.Read(nil); n != 0 || err != nil {
		t.Errorf("empty Read under Blackhole In: %d, %v; want 0, nil at once", n, err)
	}

	// Without a deadline the read blocks until the rule is healed, then
	// delivers what arrives after.
	if err := bEnd.SetReadDeadline(time.Time{}); err != nil {
		t.Fatalf("clear deadline: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 2)
		_, err := io.ReadFull(bEnd, buf)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf)
	}()
	select {
	case s := <-got:
		t.Fatalf("read returned %q under Blackhole In", s)
	case <-time.After(quiet):
	}
	p.b.Faults().Heal("a")
	mustWrite(t, aEnd, "ok")
	select {
	case s := <-got:
		if s != "ok" {
			t.Fatalf("read after Heal: %q, want %q", s, "ok")
		}
	case <-time.After(testTimeout):
		t.Fatalf("read still blocked after Heal")
	}
}

// TestFaults_BlackholeIn_ReadAlreadyBlocked checks that a Read blocked
// before an In Blackhole is set does not deliver what arrives after: the
// partition must not let one message per open connection through.
func TestFaults_BlackholeIn_ReadAlreadyBlocked(t *testing.T) {
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)
	data, failed := readChunks(bEnd)
	mustWrite(t, aEnd, "before")
	mustReceive(t, data, "before")
	waitBlockedIn(t, "(*Conn).Read")

	p.b.Faults().Set("a", In, Blackhole)
	mustWrite(t, aEnd, "during")
	select {
	case s := <-data:
		t.Fatalf("Read blocked before the rule returned %q, written after it", s)
	case err := <-failed:
		t.Fatalf("Read failed under Blackhole In: %v", err)
	case <-time.After(quiet):
	}

	p.b.Faults().Heal("a")
	mustWrite(t, aEnd, "after")
	mustReceive(t, data, "after")
}

// TestFaults_OneWay checks that a rule on a's Out side alone blocks a->b
// and leaves b->a working.
func TestFaults_OneWay(t *testing.T) {
	for _, rule := range []Rule{Drop, Blackhole} {
		t.Run(rule.String(), func(t *testing.T) {
			p := mustNewPair(t)
			p.a.Faults().Set("b", Out, rule)

			aEnd, bEnd := p.mustConnectBA(t)
			mustWrite(t, bEnd, "ping")
			mustRead(t, aEnd, "ping")

			_, err := aEnd.Write([]byte("pong"))
			switch rule {
			case Drop:
				if !errors.Is(err, ErrDropped) {
					t.Errorf("a's Write: %v, want ErrDropped", err)
				}
			case Blackhole:
				if err != nil {
					t.Errorf("a's Write: %v, want a silent loss", err)
				}
			}
			mustReadNothing(t, bEnd)

			if _, err := p.la.Dial(p.b.Addr().String(), 50*time.Millisecond); err == nil {
				t.Errorf("a dialed b through a %v rule", rule)
			}
		})
	}
}

func TestFaults_SetAndHeal(t *testing.T) {
	f := newFaults(testLogger(t))
	for _, step := range []struct {
		do   func()
		want map[string]PeerRules
	}{
		{func() { f.Set("b", Both, Drop) }, map[string]PeerRules{"b": {In: Drop, Out: Drop}}},
		{func() { f.Set("b", In, None) }, map[string]PeerRules{"b": {Out: Drop}}},
		{func() { f.Set("c", In, Blackhole) }, map[string]PeerRules{"b": {Out: Drop}, "c": {In: Blackhole}}},
		{func() { f.Heal("b") }, map[string]PeerRules{"c": {In: Blackhole}}},
		{func() { f.Set("c", Out, Drop) }, map[string]PeerRules{"c": {In: Blackhole, Out: Drop}}},
		{func() { f.SetDelay("c", Both, time.Second) }, map[string]PeerRules{"c": {In: Delay, Out: Delay, InDelay: time.Second, OutDelay: time.Second}}},
		{func() { f.Set("c", In, Blackhole) }, map[string]PeerRules{"c": {In: Blackhole, Out: Delay, OutDelay: time.Second}}},
		{func() { f.HealAll() }, map[string]PeerRules{}},
	} {
		step.do()
		got, _ := json.Marshal(f.Snapshot())
		want, _ := json.Marshal(step.want)
		if string(got) != string(want) {
			t.Fatalf("Snapshot = %s, want %s", got, want)
		}
	}
}

func TestFaults_SnapshotJSON(t *testing.T) {
	f := newFaults(testLogger(t))
	f.Set("n2", Out, Blackhole)
	f.SetDelay("n3", In, 250*time.Millisecond)
	got, err := json.Marshal(f.Snapshot())
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if want := `{"n2":{"in":"none","out":"blackhole"},"n3":{"in":"delay","out":"none","in_delay":"250ms"}}`; string(got) != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func TestFaults_Set_InvalidPanics(t *testing.T) {
	f := newFaults(testLogger(t))
	for name, set := range map[string]func(){
		"direction":          func() { f.Set("b", Direction(0), Drop) },
		"rule":               func() { f.Set("b", In, Rule(7)) },
		"delay without time": func() { f.Set("b", In, Delay) },
		"zero delay":         func() { f.SetDelay("b", In, 0) },
		"delay direction":    func() { f.SetDelay("b", Direction(4), time.Second) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Set with an invalid %s did not panic", name)
				}
			}()
			set()
		})
	}
}

// TestFaults_ConcurrentRulesAndTraffic flips rules while data flows both
// ways, for the race detector.
func TestFaults_ConcurrentRulesAndTraffic(t *testing.T) {
	p := mustNewPair(t)
	aEnd, bEnd := p.mustConnectAB(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pump := func(c net.Conn) {
		defer wg.Done()
		buf := make([]byte, 512)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Millisecond))
			_, _ = c.Write(buf)
			_, _ = c.Read(buf)
		}
	}
	wg.Add(2)
	go pump(aEnd)
	go pump(bEnd)
	for i := range 200 {
		dir := []Direction{In, Out, Both}[i%3]
		if i%2 == 0 {
			p.a.Faults().Set("b", dir, Blackhole)
			p.b.Faults().Set("a", dir, Blackhole)
		} else {
			p.a.Faults().SetDelay("b", dir, time.Millisecond)
			p.b.Faults().SetDelay("a", dir, time.Millisecond)
		}
		_ = p.a.Faults().Snapshot()
		p.a.Faults().Heal("b")
		p.b.Faults().HealAll()
	}
	close(stop)
	wg.Wait()
	if got := p.a.Faults().Snapshot(); len(got) != 0 {
		t.Errorf("rules left after Heal: %v", got)
	}
	mustWrite(t, aEnd, "x")
	if err := bEnd.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatalf("set deadline: %v", err)
	}
	if _, err := bEnd.Read(make([]byte, 1)); err != nil {
		t.Errorf("connection unusable after the rules were healed: %v", err)
	}
}
