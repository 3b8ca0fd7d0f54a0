package client

import (
	"context"
	"net/url"
	"time"

	"github.com/lockd/lockd/api"
)

// Consistency of a read: the zero value is a default read, answered by the
// leader under its master lease.
type Consistency string

// Read consistencies (see the API's ?consistent and ?stale).
const (
	Default    Consistency = ""
	Consistent Consistency = "consistent" // the leader confirms a quorum first
	Stale      Consistency = "stale"      // any node, from what it has applied
)

// Cluster describes the cluster as the answering node sees it.
func (c *Client) Cluster(ctx context.Context) (api.Cluster, error) {
	var out api.Cluster
	err := c.call(ctx, "GET", "/v1/cluster", nil, &out, idempotent, 0)
	return out, err
}

// Sessions lists every session, sorted by ID. It reads the list page by
// page, each page on its own: a session created or ended meanwhile may be
// missing, or shown as it was.
func (c *Client) Sessions(ctx context.Context) ([]api.Session, error) {
	return c.SessionsWith(ctx, Default)
}

// SessionsWith is Sessions with a read consistency: with Stale, the node
// asked answers from its own state, and a follower's answer has no
// TTLRemaining or RenewedAt (only the leader sees keepalives).
func (c *Client) SessionsWith(ctx context.Context, cons Consistency) ([]api.Session, error) {
	return listAllWith(ctx, c, "/v1/sessions", cons, func(l *api.SessionList) ([]api.Session, string) { return l.Sessions, l.Next })
}

// SessionInfo reads one session: what it holds, and, from the leader,
// the time it has left (TTLRemaining) and its last renewal (RenewedAt),
// like etcdctl lease timetolive. A session that does not exist is
// ErrSessionExpired.
func (c *Client) SessionInfo(ctx context.Context, id string, cons Consistency) (api.Session, error) {
	var out api.Session
	err := c.call(ctx, "GET", "/v1/sessions/"+url.PathEscape(id)+query(0, 0, string(cons)), nil, &out, idempotent, 0)
	return out, err
}

// Locks lists every lock that exists (held, queued for or in lock-delay),
// sorted by name, page by page as Sessions does.
func (c *Client) Locks(ctx context.Context) ([]api.Lock, error) {
	return listAll(ctx, c, "/v1/locks", func(l *api.LockList) ([]api.Lock, string) { return l.Locks, l.Next })
}

// Elections lists every election that exists (led, campaigned for or in
// lock-delay), sorted by name, page by page as Sessions does.
func (c *Client) Elections(ctx context.Context) ([]api.Election, error) {
	return listAll(ctx, c, "/v1/elections", func(l *api.ElectionList) ([]api.Election, string) { return l.Elections, l.Next })
}

// listAll reads a list through to its last page.
func listAll[L, T any](ctx context.Context, c *Client, path string, items func(*L) ([]T, string)) ([]T, error) {
	return listAllWith(ctx, c, path, Default, items)
}

// listAllWith is listAll with a read consistency.
func listAllWith[L, T any](ctx context.Context, c *Client, path string, cons Consistency, items func(*L) ([]T, string)) ([]T, error) {
	var flag string
	if cons != Default {
		flag = "&" + string(cons)
	}
	return api.AllPages(func(after string) ([]T, string, error) {
		var page L
		if err := c.call(ctx, "GET", path+api.PageQuery(after, api.MaxListLimit)+flag, nil, &page, idempotent, 0); err != nil {
			return nil, "", err
		}
		got, next := items(&page)
		return got, next, nil
	})
}

// Lock reads one lock; a lock that does not exist reads as free.
func (c *Client) Lock(ctx context.Context, name string, cons Consistency) (api.Lock, error) {
	var out api.Lock
	err := c.call(ctx, "GET", lockPath(name, "")+query(0, 0, string(cons)), nil, &out, idempotent, 0)
	return out, err
}

// WaitLock is a blocking query on a lock: it answers once the lock's
// ModifyIndex is above index, or when wait (at most api.MaxWait) runs
// out, with the lock as it then is. With wait 0 it reads at once.
func (c *Client) WaitLock(ctx context.Context, name string, index uint64, wait time.Duration) (api.Lock, error) {
	var out api.Lock
	err := c.call(ctx, "GET", lockPath(name, "")+query(index, wait, ""), nil, &out, idempotent, wait)
	return out, err
}

// WaitElection is WaitLock for an election: it answers once the
// election's ModifyIndex is above index, or when wait runs out. Session is
// empty when nobody leads (no ErrNoElectionLeader here).
func (c *Client) WaitElection(ctx context.Context, name string, index uint64, wait time.Duration) (api.Election, error) {
	var out api.Election
	err := c.call(ctx, "GET", electionPath(name, "")+query(index, wait, ""), nil, &out, idempotent, wait)
	return out, err
}

// WaitSession is WaitLock for a session: it answers once the applied
// index (the session's Index) is above index, or when wait runs out; a
// session that does not exist, or no longer does, is ErrSessionExpired.
func (c *Client) WaitSession(ctx context.Context, id string, index uint64, wait time.Duration) (api.Session, error) {
	var out api.Session
	err := c.call(ctx, "GET", "/v1/sessions/"+url.PathEscape(id)+query(index, wait, ""), nil, &out, idempotent, wait)
	return out, err
}

// CheckToken asks the cluster whether token belongs to a current holder of
// the lock (Chubby's CheckSequencer). A resource can call it before acting
// on a request that carries a token; Fence is the cheaper local check.
func (c *Client) CheckToken(ctx context.Context, name string, token uint64) (bool, error) {
	var out api.CheckResponse
	err := c.call(ctx, "POST", lockPath(name, "check"), api.CheckRequest{Token: token}, &out, idempotent, 0)
	return out.Valid, err
}

// Election reads who leads an election; ErrNoElectionLeader if nobody does.
func (c *Client) Election(ctx context.Context, name string) (Leader, error) {
	l, err := c.election(ctx, name, 0, 0)
	if err == nil && l.Session == "" {
		return l, ErrNoElectionLeader
	}
	return l, err
}

func (c *Client) election(ctx context.Context, name string, index uint64, wait time.Duration) (Leader, error) {
	var out api.Election
	err := c.call(ctx, "GET", electionPath(name, "")+query(index, wait, ""), nil, &out, idempotent, wait)
	return Leader{Session: out.Session, Value: out.Value, Token: out.Token, ModifyIndex: out.ModifyIndex}, err
}

func (c *Client) createSession(ctx context.Context, req api.CreateSessionRequest) (api.Session, error) {
	var out api.Session
	err := c.call(ctx, "POST", "/v1/sessions", req, &out, unsent, 0)
	return out, err
}

func (c *Client) keepAlive(ctx context.Context, id string) error {
	return c.call(ctx, "POST", "/v1/sessions/"+id+"/keepalive", nil, nil, idempotent, 0)
}

// KeepAliveSessions renews sessions by id in one request, as one keepalive
// each would (POST /v1/sessions/keepalive): for a process that keeps many
// sessions alive, such as a proxy for many clients, one request a round
// instead of one per session. The answer lists the sessions renewed and the
// ids the leader reports expired (gone for good: create new ones); an error
// means none can be counted as renewed. A Session of this package keeps
// itself alive and needs no call: the sessions of one Client are renewed
// together, by this request, once one of them is due.
func (c *Client) KeepAliveSessions(ctx context.Context, ids ...string) (api.KeepAliveManyResponse, error) {
	var out api.KeepAliveManyResponse
	err := c.call(ctx, "POST", "/v1/sessions/keepalive", api.KeepAliveManyRequest{IDs: ids}, &out, idempotent, 0)
	return out, err
}

func (c *Client) destroySession(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/v1/sessions/"+id, nil, nil, idempotent, 0)
}

// acquire is idempotent per session: a repeat returns the same token, or
// finds the session still queued.
func (c *Client) acquire(ctx context.Context, name string, req api.AcquireRequest) (api.AcquireResponse, error) {
	var out api.AcquireResponse
	err := c.call(ctx, "POST", lockPath(name, "acquire"), req, &out, idempotent, req.Wait.D())
	return out, err
}

func (c *Client) release(ctx context.Context, name, session string, seq uint64) error {
	return c.call(ctx, "POST", lockPath(name, "release"), api.SessionRequest{Session: session, Seq: seq}, nil, idempotent, 0)
}

func (c *Client) campaign(ctx context.Context, name string, req api.CampaignRequest) (api.Election, error) {
	var out api.Election
	err := c.call(ctx, "POST", electionPath(name, "campaign"), req, &out, idempotent, req.Wait.D())
	return out, err
}

func (c *Client) proclaim(ctx context.Context, name string, req api.ProclaimRequest) error {
	return c.call(ctx, "POST", electionPath(name, "proclaim"), req, nil, idempotent, 0)
}

func (c *Client) resign(ctx context.Context, name, session string, seq uint64) error {
	return c.call(ctx, "POST", electionPath(name, "resign"), api.SessionRequest{Session: session, Seq: seq}, nil, idempotent, 0)
}
