package runner

import (
	"context"
	"sync"
	"time"

	"github.com/lockd/lockd/jepsen/history"
	"github.com/lockd/lockd/jepsen/validate"
	"github.com/lockd/lockd/test/proccluster"
)

// pollEvery is how often the poller asks every node GET /v1/cluster.
const pollEvery = 100 * time.Millisecond

// poller asks every running, unpaused node who it thinks it is, for the
// leaders checker, and what it has applied and whom it follows, for the
// stale-reads checker.
type poller struct {
	c    *proccluster.Cluster
	rec  *history.Recorder
	mu   sync.Mutex
	all  []validate.Sample
	done chan struct{}
}

func newPoller(c *proccluster.Cluster, rec *history.Recorder) *poller {
	return &poller{c: c, rec: rec, done: make(chan struct{})}
}

func (p *poller) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for round := 0; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var wg sync.WaitGroup
		for _, n := range p.c.Nodes {
			if !n.Alive() || n.Paused() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				at, proc := p.rec.Now(), n.PID()
				st, err := n.Status(sctx)
				ret := p.rec.Now()
				if err != nil {
					return
				}
				if n.PID() != proc {
					proc = 0 // restarted meanwhile: which process answered is unknown
				}
				s := validate.Sample{Round: round, At: at, Node: n.ID, State: st.State, Term: st.Term,
					Return: ret, Proc: proc, Applied: st.AppliedIndex}
				if st.Leader != nil {
					s.Leader = st.Leader.ID
				}
				p.mu.Lock()
				p.all = append(p.all, s)
				p.mu.Unlock()
			}()
		}
		wg.Wait()
	}
}

func (p *poller) wait() { <-p.done }

func (p *poller) samples() []validate.Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]validate.Sample(nil), p.all...)
}
