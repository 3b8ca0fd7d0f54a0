package traffic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/lockd/lockd/jepsen/history"
)

// TestHoldReport checks the conversion of a child's hold to the harness
// clock: From no earlier than the acquire's return, To no later than the
// belief's end, whatever the delay of the clock reading.
func TestHoldReport(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	// The harness clock read 1000 ms somewhere between t0 = 0 and t1 = 10
	// (child's clock): the child's 0 is harness 990..1000.
	r := holdReport("child-0", "s", 4, int64(1000*time.Millisecond), at(0), at(10), at(20), at(500))
	if r.From != int64(1020*time.Millisecond) || r.To != int64(1490*time.Millisecond) {
		t.Fatalf("hold %v-%v, want 1.02s-1.49s", time.Duration(r.From), time.Duration(r.To))
	}
	if r := holdReport("child-0", "s", 4, 0, at(0), at(10), at(20), at(500)); r.From != 0 || r.To != 0 {
		t.Fatalf("without a clock reading: hold %d-%d, want none", r.From, r.To)
	}
}

// TestResource_RecordsChildHolds drives the resource as a child would: a
// reported hold goes into the history, marked paused (from the pause's
// start) when the harness stopped the child during it, and not otherwise.
func TestResource_RecordsChildHolds(t *testing.T) {
	rec := history.NewRecorder()
	r, err := NewResource(true, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.srv.Close() }()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer func() { cmd.Process.Kill(); _ = cmd.Wait() }()
	c := &Child{Name: "child-0", cmd: cmd, done: make(chan struct{}), rec: rec}
	r.children = append(r.children, c)
	post := func(path string, v any) {
		b, _ := json.Marshal(v)
		resp, err := http.Post(r.URL()+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	from := rec.Now()
	post("/grant", Grant{Client: c.Name, Session: "s1", Token: 3, Call: from})
	post("/released", HoldReport{Client: c.Name, Session: "s1", Token: 3, From: from, To: rec.Now()})

	from = rec.Now()
	post("/grant", Grant{Client: c.Name, Session: "s2", Token: 4, Call: from})
	time.Sleep(time.Millisecond)
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	post("/released", HoldReport{Client: c.Name, Session: "s2", Token: 4, From: from, To: rec.Now()})
	post("/released", HoldReport{Client: c.Name, Session: "s3", Token: 5}) // bounds unknown: no hold

	holds := rec.Holds()
	if len(holds) != 2 {
		t.Fatalf("%d holds recorded, want 2: %+v", len(holds), holds)
	}
	if h := holds[0]; h.Session != "s1" || h.Lock != FencedLock || h.Token != 3 || h.Paused {
		t.Errorf("first hold %+v, want s1's, token 3, not paused", h)
	}
	if h := holds[1]; h.Session != "s2" || !h.Paused || h.PausedAt <= h.From || h.PausedAt >= h.To {
		t.Errorf("second hold %+v, want s2's, paused from a moment inside it", h)
	}
	if g := r.Grants(); len(g) != 2 || !g[0].Child {
		t.Errorf("grants %+v, want two child grants", g)
	}
}
