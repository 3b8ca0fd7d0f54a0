package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// leading returns the current leader term, or no_leader if this node cannot
// serve leader requests now: it is not leader, is still establishing
// itself, or its master lease has run out.
func (n *Node) leading() (*leaderTerm, error) {
	t := n.currentTerm()
	if t == nil {
		return nil, errNoLeader("this node is not the leader")
	}
	if !t.leaseValid() {
		return nil, errNoLeader("the leader's master lease has run out")
	}
	return t, nil
}

// CreateSession commits a new session and starts its deadline.
func (n *Node) CreateSession(ctx context.Context, req api.CreateSessionRequest) (api.Session, error) {
	t, err := n.leading()
	if err != nil {
		return api.Session{}, err
	}
	ttl := req.TTL.D()
	if ttl == 0 {
		ttl = api.DefaultTTL
	}
	delay := api.DefaultLockDelay
	if req.LockDelay != nil {
		delay = req.LockDelay.D()
	}
	if err := n.checkSessionLimit(req.Owner); err != nil {
		return api.Session{}, err
	}
	id := newSessionID()
	res, err := n.propose(ctx, fsm.Command{Op: fsm.OpCreateSession, Session: id, Name: req.Name, TTL: ttl, LockDelay: delay,
		SeqWindow: fsm.DefaultSeqWindow, Owner: req.Owner})
	if err != nil {
		return api.Session{}, err
	}
	if res.Err != nil {
		return api.Session{}, n.apiErr(res.Err, id, "session")
	}
	t.track(id, ttl)
	n.count.sessionsCreated.Add(1)
	return n.wireSession(*res.Session), nil
}

// KeepAlive renews a session's leader-local deadline. It writes nothing to
// the log and is answered only under the master lease. A session whose
// deadline has passed is not revived: its expiry may already be in flight.
func (n *Node) KeepAlive(ctx context.Context, id string) (api.KeepAliveResponse, error) {
	t, err := n.leading()
	if err != nil {
		return api.KeepAliveResponse{}, err
	}
	s, ok := n.fsm.Session(id)
	if !ok || !t.extend(id, s.TTL) {
		return api.KeepAliveResponse{}, n.apiErr(fsm.ErrSessionNotFound, id, "")
	}
	if n.cfg.Unsafe.KeepaliveWrites {
		// An entry the state machine refuses: it changes nothing but the log.
		if _, err := n.propose(ctx, fsm.Command{Op: fsm.OpTimersDue}); err != nil {
			return api.KeepAliveResponse{}, err
		}
	}
	// Checked after the extension: the answer is true as of a moment the
	// lease held, whatever delays its delivery.
	if !t.leaseValid() {
		return api.KeepAliveResponse{}, errNoLeader("the leader's master lease has run out")
	}
	n.count.keepalives.Add(1)
	return api.KeepAliveResponse{ID: id, TTL: api.Duration(s.TTL)}, nil
}

// DestroySession commits the end of a session; its locks are released at
// once, with no lock-delay.
func (n *Node) DestroySession(ctx context.Context, id string) error {
	t, err := n.leading()
	if err != nil {
		return err
	}
	cmd := fsm.Command{Op: fsm.OpDestroySession, Session: id}
	if refused, err := n.refusedAtOnce(ctx, cmd, ""); refused {
		t.forget(id)
		return err
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return err
	}
	t.forget(id)
	return n.apiErr(res.Err, id, "")
}

// Session reads one session with the locks it holds.
func (n *Node) Session(ctx context.Context, id string, opt api.ReadOptions) (api.Session, error) {
	var found bool
	s, err := read(ctx, n, opt, func() (api.Session, uint64) {
		// The index first: the session, read after, is at least as new,
		// so a blocking query from this index misses no change.
		index := n.fsm.AppliedIndex()
		s, ok := n.fsm.Session(id)
		found = ok
		if !ok {
			return api.Session{}, index
		}
		ws := n.wireSession(s)
		ws.Index = index
		return ws, index
	})
	if err == nil && !found {
		err = n.apiErr(fsm.ErrSessionNotFound, id, "")
	}
	return s, err
}

// Sessions reads one page of the sessions. Its index is the applied
// index: the list shows what each session holds, which any entry may
// change.
func (n *Node) Sessions(ctx context.Context, opt api.ListOptions) (api.SessionList, error) {
	p, err := readPage(ctx, n, opt, fsm.AppliedTopic(), n.fsm.AppliedIndex, n.fsm.SessionsAfter, n.wireSession, func(s fsm.Session) string { return s.ID })
	return api.SessionList{Sessions: p.items, Index: p.index, Next: p.next}, err
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
	return readWith(ctx, n, opt.ReadOptions, topic, index, func() page[W] {
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

func (n *Node) wireSession(s fsm.Session) api.Session {
	locks, elections := n.fsm.SessionHolds(s.ID)
	ws := api.Session{
		ID: s.ID, Name: s.Name, TTL: api.Duration(s.TTL), LockDelay: api.Duration(s.LockDelay),
		CreateIndex: s.CreateIndex, Locks: locks, Elections: elections,
	}
	n.sessionTimes(&ws, s.TTL)
	return ws
}

// sessionTimes fills in the time a session has left and its last renewal,
// from the deadline table of the term this node leads; on a node that does
// not lead (a follower's ?stale read) it leaves them out: only the leader
// sees keepalives. The time left is rounded to the millisecond; the
// renewal is the deadline less the TTL, told in the node's wall time.
func (n *Node) sessionTimes(ws *api.Session, ttl time.Duration) {
	t := n.currentTerm()
	if t == nil {
		return
	}
	end, ok := t.sessionDeadline(ws.ID)
	if !ok {
		return
	}
	now := n.clock.Now()
	left := api.Duration(max(end.Sub(now), 0).Round(time.Millisecond))
	ago := max(now.Sub(end.Add(-n.cfg.Unsafe.sessionTTL(ttl))), 0)
	at := wallNow(n.clock).Add(-ago).UTC()
	ws.TTLRemaining, ws.RenewedAt = &left, &at
}

// newSessionID returns 128 random bits in hex: unguessable, so one client
// cannot release another's locks by guessing its session.
func newSessionID() string { return randomHex(16) }

// randomHex returns n random bytes from crypto/rand, hex-encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("lease: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// read serves a GET of state with the requested consistency: stale reads
// from the local FSM on any node; default reads on the leader, checked
// against the master lease after the state was read; consistent reads on
// the leader after a quorum confirmation that started after the request.
// With Wait it is a blocking query: it returns when the index get reports
// exceeds opt.Index, or when Wait runs out. read's index is the applied
// index, which every entry changes; readOn waits for entries that change
// topic, the part of the state whose index get reports.
func read[T any](ctx context.Context, n *Node, opt api.ReadOptions, get func() (T, uint64)) (T, error) {
	return readOn(ctx, n, opt, fsm.AppliedTopic(), get)
}

// readOn is read for a get whose index is topic's (the part of the state
// it reads): a blocking query wakes only for entries that change topic.
func readOn[T any](ctx context.Context, n *Node, opt api.ReadOptions, topic fsm.Topic, get func() (T, uint64)) (T, error) {
	return readWith(ctx, n, opt, topic, func() uint64 { _, idx := get(); return idx }, func() T { v, _ := get(); return v })
}

// readWith is readOn with the index apart from the value: a blocking query
// waits on index alone, and value, which may cost much more (a page of a
// list), is read once, when the query returns.
func readWith[T any](ctx context.Context, n *Node, opt api.ReadOptions, topic fsm.Topic, index func() uint64, value func() T) (T, error) {
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
