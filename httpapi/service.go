package httpapi

import (
	"context"

	"github.com/lockd/lockd/api"
)

// ReadOptions are the query parameters every GET of state understands. It
// is declared in package api so that a Service implementation need not import
// httpapi.
type ReadOptions = api.ReadOptions

// ListOptions are the query parameters of a list: the read options, limit
// and after.
type ListOptions = api.ListOptions

// LeaderAddr names the node a follower forwards leader-only requests to.
type LeaderAddr = api.LeaderAddr

// Service is what the HTTP layer needs from a node. lease.Node implements it
// for Raft mode. Errors that should reach the client with a specific status
// are *api.Error values (see api.Code*); anything else is answered 500.
//
// Methods may block: Acquire and Campaign for up to the request's Wait, reads
// for up to ReadOptions.Wait. They honour ctx: when it is cancelled they
// return promptly. A queued acquire then keeps its place until its own wait
// runs out, so that the client's retry of the same request finds it.
type Service interface {
	// Leader reports whether this node should serve leader-only requests
	// itself (it is the leader), and otherwise the leader to forward them
	// to (the zero LeaderAddr when no leader is known). It is called on
	// every request and every 100 ms of a forwarded one: it must be cheap.
	Leader() (isLeader bool, to LeaderAddr)
	// MemberHTTP returns the HTTP address of member id, "" if unknown. It
	// is called only when a leader named without one (LeaderAddr.HTTP)
	// must be reached over HTTP, or named in an error message.
	MemberHTTP(id string) string

	CreateSession(ctx context.Context, req api.CreateSessionRequest) (api.Session, error)
	KeepAlive(ctx context.Context, id string) (api.KeepAliveResponse, error)
	// KeepAliveMany renews sessions ids (1 to api.MaxKeepAliveIDs of
	// them, none empty) as KeepAlive renews one.
	KeepAliveMany(ctx context.Context, ids []string) (api.KeepAliveManyResponse, error)
	DestroySession(ctx context.Context, id string) error
	Session(ctx context.Context, id string, opt ReadOptions) (api.Session, error)
	// Sessions, Locks and Elections read one page of a list; opt.Limit is
	// within 1..api.MaxListLimit.
	Sessions(ctx context.Context, opt ListOptions) (api.SessionList, error)

	Acquire(ctx context.Context, name string, req api.AcquireRequest) (api.AcquireResponse, error)
	Release(ctx context.Context, name string, req api.SessionRequest) error
	Lock(ctx context.Context, name string, opt ReadOptions) (api.Lock, error)
	Locks(ctx context.Context, opt ListOptions) (api.LockList, error)
	Check(ctx context.Context, name string, token uint64) (bool, error)

	Campaign(ctx context.Context, name string, req api.CampaignRequest) (api.Election, error)
	Proclaim(ctx context.Context, name string, req api.ProclaimRequest) error
	Resign(ctx context.Context, name string, req api.SessionRequest) error
	Election(ctx context.Context, name string, opt ReadOptions) (api.Election, error)
	Elections(ctx context.Context, opt ListOptions) (api.ElectionList, error)

	// The namespace of keys (kv.go).
	KVService

	Cluster(ctx context.Context) (api.Cluster, error)
	// AddMember adds m as a voter, or as a non-voter if m.Voter is false.
	AddMember(ctx context.Context, m api.Member) error
	RemoveMember(ctx context.Context, id string) error
	// TransferLeadership hands leadership to the voter to ("" lets the
	// node pick one) and returns once this node has stepped down, or fails
	// (not_found: no such member; bad_request: not a voter, or nobody to
	// hand over to; timeout: the transfer did not complete).
	TransferLeadership(ctx context.Context, to string) (api.TransferResponse, error)
	// Removal returns nil while the node is a member of the cluster, and a
	// *api.Error with code api.CodeRemoved once it knows it was removed:
	// every route but the health checks is then answered with it.
	Removal() error

	// Ready returns nil when the node can serve a default read right now,
	// itself or by forwarding.
	Ready(ctx context.Context) error
}
