package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// The read path of every object: one function, read, decides where and
// how a GET is served (stale, lease or consistent; blocking or not);
// readPage reads one page of a list through it.

// read serves a GET of state with the requested consistency: stale reads
// from the local FSM on any node; default reads on the leader, checked
// against the master lease after the state was read; consistent reads on
// the leader after a quorum confirmation that started after the request.
//
// topic is the part of the state the read depends on (fsm.AppliedTopic for
// all of it) and index reports that part's index. With opt.Wait the read
// is a blocking query: it returns when index exceeds opt.Index, or when
// the wait runs out, waking only for entries that change topic and
// looking at index alone; value, which may cost much more (a page of a
// list), is read once, when the query returns.
func read[T any](ctx context.Context, n *Node, opt api.ReadOptions, topic fsm.Topic, index func() uint64, value func() T) (T, error) {
	var zero T
	var t *leaderTerm
	if !opt.Stale {
		var err error
		if t, err = n.leading(); err != nil {
			return zero, err
		}
	}
	if opt.Wait > 0 {
		if !n.startBlocking() {
			return zero, errTooMany(n.cfg.MaxBlockingQueries)
		}
		err := waitIndex(ctx, n, t, opt, topic, index)
		n.blocking.Add(-1)
		if err != nil {
			return zero, err
		}
	}
	if opt.Consistent {
		if err := t.confirm(ctx); err != nil {
			return zero, err
		}
	}
	v := value()
	if t != nil && !opt.Consistent && !t.leaseValid() {
		return zero, errNoLeader("the leader's master lease has run out")
	}
	return v, nil
}

// startBlocking takes one of the node's Config.MaxBlockingQueries places
// for a blocking query, if one is free; the caller gives it back.
func (n *Node) startBlocking() bool {
	if n.blocking.Add(1) > int64(n.cfg.MaxBlockingQueries) {
		n.blocking.Add(-1)
		return false
	}
	return true
}

func errTooMany(limit int) error {
	return &api.Error{Code: api.CodeTooMany, RetryAfter: time.Second,
		Message: fmt.Sprintf("this node already serves %d blocking queries, its limit; nothing was done: retry later", limit)}
}

// waitIndex blocks until index exceeds opt.Index or opt.Wait passes,
// looking again whenever an entry changes topic.
func waitIndex(ctx context.Context, n *Node, t *leaderTerm, opt api.ReadOptions, topic fsm.Topic, index func() uint64) error {
	ctx, cancel := n.waitCtx(ctx)
	defer cancel()
	timer := time.NewTimer(opt.Wait)
	defer timer.Stop()
	var lost <-chan struct{}
	if t != nil {
		lost = t.ctx.Done()
	}
	for {
		done, err := func() (bool, error) {
			changed, stop := n.fsm.Watch(topic)
			defer stop()
			if index() > opt.Index {
				return true, nil
			}
			select {
			case <-changed:
				return false, nil
			case <-timer.C:
				return true, nil
			case <-lost:
				return true, errNoLeader("leadership lost")
			case <-ctx.Done():
				return true, ctxErr(ctx)
			}
		}()
		if done {
			return err
		}
	}
}

// page is one page of a list: its items, the list's index, and the cursor
// of the next page ("" for the last).
type page[W any] struct {
	items []W
	index uint64
	next  string
}

// readPage reads one page of a list as opt asks: the first opt.Limit
// items (in key order) after opt.After, read from the state by after and
// converted by conv. A blocking query wakes for the entries that change
// topic and waits on index alone, so that each wake-up costs no more than
// reading the index.
func readPage[S, W any](ctx context.Context, n *Node, opt api.ListOptions, topic fsm.Topic, index func() uint64,
	after func(string, int) ([]S, bool), conv func(S) W, key func(S) string) (page[W], error) {
	return read(ctx, n, opt.ReadOptions, topic, index, func() page[W] {
		p := page[W]{index: index()}
		items, more := after(opt.After, listLimit(opt.Limit))
		p.items = make([]W, 0, len(items))
		for _, it := range items {
			p.items = append(p.items, conv(it))
		}
		if more && len(items) > 0 {
			p.next = key(items[len(items)-1])
		}
		return p
	})
}

// listLimit is the page size of a list: limit, or the default for 0,
// within the API's bound.
func listLimit(limit int) int {
	if limit <= 0 {
		return api.DefaultListLimit
	}
	return min(limit, api.MaxListLimit)
}
