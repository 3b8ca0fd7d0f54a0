package client

import (
	"context"
	"errors"
	"time"

	"github.com/lockd/lockd/api"
)

// Leader is the leader of an election as the cluster sees it. Session is
// empty when nobody leads.
type Leader struct {
	Session     string
	Value       string
	Token       uint64 // fencing token of the leadership
	ModifyIndex uint64
}

// observeWait is how long one blocking query of Observe waits.
const observeWait = 30 * time.Second

// Election is a named leader lease: at most one session leads it at a time,
// with a value (typically its address) that others read or observe.
// Leadership ends with Resign or with the session, like a Mutex.
type Election struct {
	s    *Session
	name string
	m    *Mutex // the holding bookkeeping is the Mutex's
}

// NewElection returns an Election for name on session s. It does no I/O.
func NewElection(s *Session, name string) *Election {
	return &Election{s: s, name: name, m: NewMutex(s, name)}
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// Campaign blocks until this session leads the election with value, ctx
// ends, or the session is lost. If it already leads, it returns at once and
// the value is unchanged (use Proclaim).
//
// When Campaign returns an error, the caller must act as if it does not
// lead, and the Election sees to it that the session does not lead either:
// if the outcome is unknown (ctx ended while the request was in flight, the
// answer was lost), it resigns, as Mutex.Lock releases (see there). A
// session that already led keeps its leadership.
func (e *Election) Campaign(ctx context.Context, value string) error {
	for {
		if !e.s.Alive() {
			return ErrSessionLost
		}
		leading := e.m.holding()
		wait := maxWaitChunk
		if dl, ok := ctx.Deadline(); ok {
			wait = max(min(wait, time.Until(dl)), time.Millisecond)
		}
		r, err := e.s.c.campaign(ctx, e.name, api.CampaignRequest{Session: e.s.id, Value: value, Wait: api.Duration(wait), Seq: e.s.nextSeq()})
		switch {
		case err == nil:
			if !e.s.Alive() {
				return ErrSessionLost
			}
			e.m.hold(r.Token)
			return nil
		case errors.Is(err, ErrSessionExpired):
			e.s.lose(ErrSessionExpired)
			return ErrSessionLost
		case (errors.Is(err, ErrLockHeld) || errors.Is(err, ErrLockDelay)) && ctx.Err() == nil:
			if errors.Is(err, ErrLockDelay) {
				if err := sleepCtx(ctx, retryAfter(err)); err != nil {
					return err
				}
			}
			continue
		default:
			if !leading && outcomeUnknown(err) {
				giveBack(ctx, e.s, func(ctx context.Context, seq uint64) error {
					return e.s.c.resign(ctx, e.name, e.s.id, seq)
				})
			}
			return err
		}
	}
}

// Proclaim changes the leader's value without giving up leadership.
func (e *Election) Proclaim(ctx context.Context, value string) error {
	if !e.m.Held() {
		return ErrNotLeader
	}
	err := e.s.c.proclaim(ctx, e.name, api.ProclaimRequest{Session: e.s.id, Value: value, Seq: e.s.nextSeq()})
	if errors.Is(err, ErrNotHolder) {
		return ErrNotLeader
	}
	return err
}

// Resign gives up leadership (or leaves the queue of candidates).
func (e *Election) Resign(ctx context.Context) error {
	e.m.endHolding()
	err := e.s.c.resign(ctx, e.name, e.s.id, e.s.nextSeq())
	if errors.Is(err, ErrNotHolder) || errors.Is(err, ErrSessionExpired) {
		return nil
	}
	return err
}

// Leading reports whether this session leads, checking its local deadline.
func (e *Election) Leading() bool { return e.m.Held() }

// Token returns the fencing token of this session's leadership, or 0.
func (e *Election) Token() uint64 { return e.m.Token() }

// Lost returns a channel closed when this session's leadership ends.
func (e *Election) Lost() <-chan struct{} { return e.m.Lost() }

// Leader reads who leads now; ErrNoElectionLeader if nobody does.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	return e.s.c.Election(ctx, e.name)
}

// Observe sends the election's leader each time it changes (a Leader with
// an empty Session when nobody leads), starting with the current one. The
// channel is closed when ctx ends. It does not need this Election's session
// to lead.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	return e.s.c.Observe(ctx, e.name)
}

// Observe is Election.Observe without a session: anyone may watch.
func (c *Client) Observe(ctx context.Context, name string) <-chan Leader {
	ch := make(chan Leader)
	go func() {
		defer close(ch)
		var last Leader
		first := true
		var index uint64
		for ctx.Err() == nil {
			wait := observeWait
			if first {
				wait = 0 // the current leader at once, then changes
			}
			l, err := c.election(ctx, name, index, wait)
			if err != nil {
				if sleepCtx(ctx, time.Second) != nil {
					return
				}
				continue
			}
			index = l.ModifyIndex
			if !first && l.Session == last.Session && l.Value == last.Value && l.Token == last.Token {
				continue
			}
			first, last = false, l
			select {
			case ch <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}
