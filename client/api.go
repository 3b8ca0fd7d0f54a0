package client

import (
	"context"
	"time"

	"github.com/lockd/lockd/httpapi/wire"
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
func (c *Client) Cluster(ctx context.Context) (wire.Cluster, error) {
	var out wire.Cluster
	err := c.call(ctx, "GET", "/v1/cluster", nil, &out, idempotent, 0)
	return out, err
}

// Sessions lists every session.
func (c *Client) Sessions(ctx context.Context) ([]wire.Session, error) {
	var out wire.SessionList
	err := c.call(ctx, "GET", "/v1/sessions", nil, &out, idempotent, 0)
	return out.Sessions, err
}

// Locks lists every lock that exists (held, queued for or in lock-delay).
func (c *Client) Locks(ctx context.Context) ([]wire.Lock, error) {
	var out wire.LockList
	err := c.call(ctx, "GET", "/v1/locks", nil, &out, idempotent, 0)
	return out.Locks, err
}

// Lock reads one lock; a lock that does not exist reads as free.
func (c *Client) Lock(ctx context.Context, name string, cons Consistency) (wire.Lock, error) {
	var out wire.Lock
	err := c.call(ctx, "GET", lockPath(name, "")+query(0, 0, string(cons)), nil, &out, idempotent, 0)
	return out, err
}

// CheckToken asks the cluster whether token belongs to a current holder of
// the lock (Chubby's CheckSequencer). A resource can call it before acting
// on a request that carries a token; Fence is the cheaper local check.
func (c *Client) CheckToken(ctx context.Context, name string, token uint64) (bool, error) {
	var out wire.CheckResponse
	err := c.call(ctx, "POST", lockPath(name, "check"), wire.CheckRequest{Token: token}, &out, idempotent, 0)
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
	var out wire.Election
	err := c.call(ctx, "GET", electionPath(name, "")+query(index, wait, ""), nil, &out, idempotent, wait)
	return Leader{Session: out.Session, Value: out.Value, Token: out.Token, ModifyIndex: out.ModifyIndex}, err
}

func (c *Client) createSession(ctx context.Context, req wire.CreateSessionRequest) (wire.Session, error) {
	var out wire.Session
	err := c.call(ctx, "POST", "/v1/sessions", req, &out, unsent, 0)
	return out, err
}

func (c *Client) keepAlive(ctx context.Context, id string) error {
	return c.call(ctx, "POST", "/v1/sessions/"+id+"/keepalive", nil, nil, idempotent, 0)
}

func (c *Client) destroySession(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/v1/sessions/"+id, nil, nil, idempotent, 0)
}

// acquire is idempotent per session: a repeat returns the same token, or
// finds the session still queued.
func (c *Client) acquire(ctx context.Context, name string, req wire.AcquireRequest) (wire.AcquireResponse, error) {
	var out wire.AcquireResponse
	err := c.call(ctx, "POST", lockPath(name, "acquire"), req, &out, idempotent, req.Wait.D())
	return out, err
}

func (c *Client) release(ctx context.Context, name, session string, seq uint64) error {
	return c.call(ctx, "POST", lockPath(name, "release"), wire.SessionRequest{Session: session, Seq: seq}, nil, idempotent, 0)
}

func (c *Client) campaign(ctx context.Context, name string, req wire.CampaignRequest) (wire.Election, error) {
	var out wire.Election
	err := c.call(ctx, "POST", electionPath(name, "campaign"), req, &out, idempotent, req.Wait.D())
	return out, err
}

func (c *Client) proclaim(ctx context.Context, name string, req wire.ProclaimRequest) error {
	return c.call(ctx, "POST", electionPath(name, "proclaim"), req, nil, idempotent, 0)
}

func (c *Client) resign(ctx context.Context, name, session string, seq uint64) error {
	return c.call(ctx, "POST", electionPath(name, "resign"), wire.SessionRequest{Session: session, Seq: seq}, nil, idempotent, 0)
}
