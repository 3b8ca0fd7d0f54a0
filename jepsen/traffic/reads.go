package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/client"
	"github.com/lockd/lockd/jepsen/history"
)

// consistentEvery is how often, in reads, the node reader issues a
// ?consistent read instead of a ?stale one.
const consistentEvery = 5

// nodeReader reads the lock workload's locks through one node only, under
// faults as well: mostly ?stale reads, which the node answers from its own
// state (recorded apart, for the stale-reads checker: monotonic per node
// process; with the election workload, some of the election), and every
// consistentEvery-th a ?consistent read, which the leader confirms with a
// quorum and which goes into the history for linearizability.
func (t *Traffic) nodeReader(ctx context.Context, node int, rng *rand.Rand) {
	c, err := t.access(t.lockToken).Client(client.Config{Endpoints: []string{t.cfg.Endpoints[node]},
		RequestTimeout: 500 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		return
	}
	hc := &http.Client{Transport: t.transport(t.lockToken)}
	id := t.nextClient()
	for i := 0; sleep(ctx, jitter(rng, 10*time.Millisecond, 50*time.Millisecond)); i++ {
		l := LockNames[rng.IntN(len(LockNames))]
		var r history.StaleRead
		var ok bool
		switch {
		case i%consistentEvery == 0:
			t.consistentRead(ctx, c, id, node, l)
			continue
		case t.has(Elections) && i%consistentEvery == 1:
			r, ok = t.staleElection(ctx, hc, node)
		default:
			r, ok = t.staleRead(ctx, c, node, l)
		}
		if ok {
			r.Client = id
			t.rec.AddStaleRead(r)
		}
	}
}

// staleElection reads the workload's election with ?stale through node
// with hc (the client library's election reads take no consistency), and
// returns the read as staleRead does. Its Lock is the election's name.
func (t *Traffic) staleElection(ctx context.Context, hc *http.Client, node int) (history.StaleRead, bool) {
	t.count("stale reads")
	proc := t.proc(node)
	before := proc()
	r := history.StaleRead{Node: t.cfg.NodeIDs[node], Proc: before, Lock: ElectionName, Call: t.rec.Now()}
	octx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var e api.Election
	err := rawGet(octx, hc, t.cfg.Endpoints[node]+"/v1/elections/"+ElectionName+"?stale", &e)
	r.Return = t.rec.Now()
	if err != nil || proc() != before {
		return r, false
	}
	r.Index, r.Holder, r.Token = e.ModifyIndex, e.Session, e.Token
	return r, true
}

// rawGet GETs url with hc and decodes a 2xx JSON answer into out.
func rawGet(ctx context.Context, hc *http.Client, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// consistentRead reads lock l with ?consistent through c and records it,
// and the index it saw as an acknowledged write (history.Ack) for the
// stale-reads checker.
func (t *Traffic) consistentRead(ctx context.Context, c *client.Client, id, node int, l string) {
	t.count("consistent reads")
	t.readLock(ctx, c, history.Op{Client: id, Lock: l, Node: t.cfg.NodeIDs[node]}, client.Consistent, func(_ *history.Op, lk api.Lock) {
		// The leader confirmed its leadership with a quorum and answered
		// from its applied state: the lock's modify index is committed by
		// now, an acknowledged write for the stale-reads checker.
		t.rec.AddAck(history.Ack{Lock: l, Index: lk.ModifyIndex, Return: t.rec.Now(), Run: true})
	})
}

// staleRead reads lock l with ?stale through c, a client of node only,
// and returns the read unless it failed or the node's process changed
// while it ran (a restarted process may start behind).
func (t *Traffic) staleRead(ctx context.Context, c *client.Client, node int, l string) (history.StaleRead, bool) {
	t.count("stale reads")
	return StaleRead(ctx, t.rec, c, t.cfg.NodeIDs[node], t.proc(node), l)
}

// StaleRead reads lock l with ?stale through c, a client of the node named
// id, whose current process proc reports (0: unknown); ok is false when
// the read failed or the process changed while it ran.
func StaleRead(ctx context.Context, rec *history.Recorder, c *client.Client, id string, proc func() int, l string) (history.StaleRead, bool) {
	before := proc()
	r := history.StaleRead{Node: id, Proc: before, Lock: l, Call: rec.Now()}
	octx, cancel := context.WithTimeout(ctx, time.Second)
	lk, err := c.Lock(octx, l, client.Stale)
	cancel()
	r.Return = rec.Now()
	if err != nil || proc() != before {
		return r, false
	}
	r.Index = lk.ModifyIndex
	if len(lk.Holders) > 0 {
		r.Holder, r.Token = lk.Holders[0].Session, lk.Holders[0].Token
	}
	return r, true
}

// proc returns the function that reports node's current process.
func (t *Traffic) proc(node int) func() int {
	return func() int {
		if t.cfg.Proc == nil {
			return 0
		}
		return t.cfg.Proc(node)
	}
}
