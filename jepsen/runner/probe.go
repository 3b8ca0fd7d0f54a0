package runner

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockd/lockd/httpapi"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/test/proccluster"
)

// probeEvery is how often the prober asks each node for a lease read.
const probeEvery = 20 * time.Millisecond

// probePath is what the probes read: a default read (under the master
// lease) of a lock no workload takes.
const probePath = "/v1/locks/jepsen/probe"

// prober is the master-lease checker's outside witness: it asks every
// running, unpaused node for a default read, one after another, with the
// forwarded-request header, so that a node answers from its own lease or
// not at all (a node that is not the leader answers 503 instead of
// forwarding, and a leader answers a default read only under its lease).
// It records every read answered 200 with when it was sent and answered,
// in the host's CLOCK_MONOTONIC, the lease logs' clock
// (validate.CheckLeaseProbes).
type prober struct {
	c    *proccluster.Cluster
	hc   *http.Client
	mu   sync.Mutex
	all  []validate.LeaseProbe
	done chan struct{}
}

func newProber(c *proccluster.Cluster) *prober {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = c.ClientTLS().Clone() // net/http writes into it; the cluster's is shared
	return &prober{c: c, hc: &http.Client{Transport: tr, Timeout: 300 * time.Millisecond}, done: make(chan struct{})}
}

func (p *prober) run(ctx context.Context) {
	defer close(p.done)
	var wg sync.WaitGroup
	for _, n := range p.c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(probeEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if n.Alive() && !n.Paused() {
					p.probe(ctx, n)
				}
			}
		}()
	}
	wg.Wait()
}

// probe sends n one lease read and records it if n answered it itself.
func (p *prober) probe(ctx context.Context, n *proccluster.Node) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.HTTP+probePath, nil)
	if err != nil {
		return
	}
	req.Header.Set(httpapi.HeaderForwarded, "jepsen-probe")
	if tok := p.c.AdminToken(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	sent := monoNow()
	resp, err := p.hc.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	answered := monoNow() // the answer's headers came before this
	if resp.StatusCode != http.StatusOK || sent == 0 || answered == 0 {
		return
	}
	p.mu.Lock()
	p.all = append(p.all, validate.LeaseProbe{Node: n.ID, Sent: sent, Answered: answered})
	p.mu.Unlock()
}

func (p *prober) wait() { <-p.done }

func (p *prober) probes() []validate.LeaseProbe {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]validate.LeaseProbe(nil), p.all...)
}

// monoNow reads the host's CLOCK_MONOTONIC in nanoseconds (0 if it
// cannot).
func monoNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
