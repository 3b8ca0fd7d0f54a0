package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	return n.createSession(ctx, newSessionID(), req)
}

// CreateSessionWithID is CreateSession with the session's id chosen by
// the caller (the etcd layer names a session after its lease ID). An id
// in use is refused with an error that wraps fsm.ErrSessionExists.
func (n *Node) CreateSessionWithID(ctx context.Context, id string, req api.CreateSessionRequest) (api.Session, error) {
	if id == "" {
		return api.Session{}, badRequest(errors.New("empty session id"))
	}
	return n.createSession(ctx, id, req)
}

func (n *Node) createSession(ctx context.Context, id string, req api.CreateSessionRequest) (api.Session, error) {
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
	ttl, ok := n.renew(t, id)
	if !ok {
		return api.KeepAliveResponse{}, n.apiErr(fsm.ErrSessionNotFound, id, "")
	}
	if err := n.unsafeKeepaliveWrite(ctx); err != nil {
		return api.KeepAliveResponse{}, err
	}
	// Checked after the extension: the answer is true as of a moment the
	// lease held, whatever delays its delivery.
	if !t.leaseValid() {
		return api.KeepAliveResponse{}, errNoLeader("the leader's master lease has run out")
	}
	n.count.keepalives.Add(1)
	return api.KeepAliveResponse{ID: id, TTL: api.Duration(ttl)}, nil
}

// renew moves session id's deadline in leader term t a full TTL on, and
// returns the TTL; false if the session does not exist or its deadline
// has passed (its expiry may be in flight: it is not revived).
func (n *Node) renew(t *leaderTerm, id string) (time.Duration, bool) {
	s, ok := n.fsm.Session(id)
	if !ok || !t.extend(id, s.TTL) {
		return 0, false
	}
	return s.TTL, true
}

// KeepAliveMany renews several sessions in one call, as KeepAlive renews
// one: under one check of the master lease, made after every extension.
// The ids of sessions that no longer exist (or whose deadline has passed)
// are in Expired; the others are renewed. An error (no lease, not the
// leader) renews none that the caller can count on.
func (n *Node) KeepAliveMany(ctx context.Context, ids []string) (api.KeepAliveManyResponse, error) {
	t, err := n.leading()
	if err != nil {
		return api.KeepAliveManyResponse{}, err
	}
	out := api.KeepAliveManyResponse{Renewed: make([]api.KeepAliveResponse, 0, len(ids)), Expired: []string{}}
	for _, id := range ids {
		ttl, ok := n.renew(t, id)
		if !ok {
			out.Expired = append(out.Expired, id)
			continue
		}
		out.Renewed = append(out.Renewed, api.KeepAliveResponse{ID: id, TTL: api.Duration(ttl)})
	}
	if err := n.unsafeKeepaliveWrite(ctx); err != nil {
		return api.KeepAliveManyResponse{}, err
	}
	// Checked after the extensions, as in KeepAlive.
	if !t.leaseValid() {
		return api.KeepAliveManyResponse{}, errNoLeader("the leader's master lease has run out")
	}
	n.count.keepalives.Add(uint64(len(out.Renewed)))
	return out, nil
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
	s, err := read(ctx, n, opt, fsm.AppliedTopic(), n.fsm.AppliedIndex, func() api.Session {
		// The index first: the session, read after, is at least as new,
		// so a blocking query from this index misses no change.
		index := n.fsm.AppliedIndex()
		s, ok := n.fsm.Session(id)
		found = ok
		if !ok {
			return api.Session{}
		}
		ws := n.wireSession(s)
		ws.Index = index
		return ws
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
	ago := max(now.Sub(end.Add(-n.unsafeSessionTTL(ttl))), 0)
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
