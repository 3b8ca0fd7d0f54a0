package api

import (
	"time"

	"github.com/lockd/lockd/acl"
)

// Lock modes.
const (
	ModeExclusive = "exclusive"
	ModeShared    = "shared"
)

// CreateSessionRequest is the body of POST /v1/sessions. Every field is
// optional; empty durations take the server's defaults.
type CreateSessionRequest struct {
	TTL       Duration  `json:"ttl,omitempty"`
	LockDelay *Duration `json:"lock_delay,omitempty"`
	Name      string    `json:"name,omitempty"`
	// Owner is the accessor id of the ACL token the request came with, set
	// by the node that serves it, never by the client.
	Owner string `json:"-"`
}

// Session describes a session. Locks is filled in by GET requests.
type Session struct {
	ID          string   `json:"id"`
	Name        string   `json:"name,omitempty"`
	TTL         Duration `json:"ttl"`
	LockDelay   Duration `json:"lock_delay"`
	CreateIndex uint64   `json:"create_index,omitempty"`
	Locks       []string `json:"locks,omitempty"`
	Elections   []string `json:"elections,omitempty"`
	// TTLRemaining and RenewedAt are filled in by the leader, from its
	// table of session deadlines, which only it keeps (keepalives are not
	// replicated): how long the session has left before the leader
	// expires it, and the leader's wall time of the renewal that set that
	// deadline (the last keepalive, the creation, or the moment this
	// leader took office and gave every session a full TTL). Absent in
	// answers a follower gives from its own state (?stale).
	TTLRemaining *Duration  `json:"ttl_remaining,omitempty"`
	RenewedAt    *time.Time `json:"renewed_at,omitempty"`
	// Index is set by GET /v1/sessions/{id} only: the applied index the
	// session was read at, which a blocking query on it compares.
	Index uint64 `json:"index,omitempty"`
}

// KeepAliveResponse answers POST /v1/sessions/{id}/keepalive.
type KeepAliveResponse struct {
	ID  string   `json:"id"`
	TTL Duration `json:"ttl"`
}

// KeepAliveManyRequest is the body of POST /v1/sessions/keepalive: the
// sessions to renew in one request, 1 to MaxKeepAliveIDs of them.
type KeepAliveManyRequest struct {
	IDs []string `json:"ids"`
}

// KeepAliveManyResponse answers POST /v1/sessions/keepalive: the sessions
// renewed, in the order asked, and the ids of those that were not because
// they expired, were destroyed or never existed (each of which a single
// keepalive would have answered 410 session_expired).
type KeepAliveManyResponse struct {
	Renewed []KeepAliveResponse `json:"renewed"`
	Expired []string            `json:"expired"`
}

// AcquireRequest is the body of POST /v1/locks/{name}/acquire. Wait is how
// long to block in the waiter queue; 0 means try once.
//
// Limit, 1 to MaxLimit, makes the lock a counting semaphore: up to Limit
// sessions hold it at once, each with a token of its own. Every holder and
// waiter of a lock must give the same limit (0, the default, for an
// exclusive or shared lock); a semaphore takes no mode shared.
//
// Seq, in this and the other lock and election requests, is optional: a
// number the client makes grow with every operation of a session, and
// repeats when it retries one. The server then ignores a request whose
// number is not above the last it applied for that session and lock (an
// abandoned request that arrives late), instead of re-granting a lock the
// client has released or releasing one it has re-taken.
type AcquireRequest struct {
	Session string   `json:"session"`
	Mode    string   `json:"mode,omitempty"`
	Wait    Duration `json:"wait,omitempty"`
	Seq     uint64   `json:"seq,omitempty"`
	Limit   int      `json:"limit,omitempty"`
}

// AcquireResponse answers a successful acquire. Limit is the semaphore's
// (absent for an exclusive or shared lock).
type AcquireResponse struct {
	Name    string `json:"name"`
	Mode    string `json:"mode"`
	Token   uint64 `json:"token"`
	Session string `json:"session"`
	Limit   int    `json:"limit,omitempty"`
}

// SessionRequest is the body of release, resign and similar calls that name
// only the caller's session.
type SessionRequest struct {
	Session string `json:"session"`
	Seq     uint64 `json:"seq,omitempty"`
}

// Holder is one holder of a lock.
type Holder struct {
	Session    string    `json:"session"`
	Token      uint64    `json:"token"`
	AcquiredAt time.Time `json:"acquired_at"`
}

// Waiter is one queued acquire.
type Waiter struct {
	Session  string    `json:"session"`
	Mode     string    `json:"mode"`
	Deadline time.Time `json:"deadline"`
}

// Lock is the state of a lock. A lock that does not exist reads as free: no
// holders, an empty mode, and a ModifyIndex no lower than the last change of
// any lock. A semaphore shows its Limit, and DelayedSlots: each slot whose
// holder expired and which stays ungrantable for that holder's lock-delay.
type Lock struct {
	Name         string        `json:"name"`
	Mode         string        `json:"mode,omitempty"`
	Limit        int           `json:"limit,omitempty"`
	Holders      []Holder      `json:"holders"`
	Waiters      []Waiter      `json:"waiters"`
	DelayUntil   *time.Time    `json:"delay_until,omitempty"`
	DelayedSlots []DelayedSlot `json:"delayed_slots,omitempty"`
	ModifyIndex  uint64        `json:"modify_index"`
}

// DelayedSlot is one slot of a semaphore in a lock-delay: Session expired
// holding it, and Until is the delay's end as the leader's wall clock
// showed it then (for display: the delay ends by the leader's timer).
type DelayedSlot struct {
	Session string    `json:"session"`
	Until   time.Time `json:"until"`
}

// CheckRequest is the body of POST /v1/locks/{name}/check.
type CheckRequest struct {
	Token uint64 `json:"token"`
}

// CheckResponse tells whether a token belongs to a current holder.
type CheckResponse struct {
	Valid bool `json:"valid"`
}

// CampaignRequest is the body of POST /v1/elections/{name}/campaign.
type CampaignRequest struct {
	Session string   `json:"session"`
	Value   string   `json:"value"`
	Wait    Duration `json:"wait,omitempty"`
	Seq     uint64   `json:"seq,omitempty"`
}

// ProclaimRequest is the body of POST /v1/elections/{name}/proclaim.
type ProclaimRequest struct {
	Session string `json:"session"`
	Value   string `json:"value"`
	Seq     uint64 `json:"seq,omitempty"`
}

// Election is the state of a named election. Session is empty when nobody
// leads.
type Election struct {
	Name        string `json:"name"`
	Session     string `json:"session"`
	Value       string `json:"value"`
	Token       uint64 `json:"token"`
	ModifyIndex uint64 `json:"modify_index"`
	// AcquiredAt, Waiters and DelayUntil are shown as for a lock, and
	// only when set: when the leader was granted the election (nil while
	// nobody leads), the queued campaigns in queue order, and the end of
	// a lock-delay. Times are for display, as a lock's.
	AcquiredAt *time.Time `json:"acquired_at,omitempty"`
	Waiters    []Waiter   `json:"waiters,omitempty"`
	DelayUntil *time.Time `json:"delay_until,omitempty"`
}

// Member is one node of the cluster.
type Member struct {
	ID   string `json:"id"`
	Peer string `json:"peer"`
	HTTP string `json:"http"`
	// Etcd is the URL of the member's etcd API (lockd serve
	// --etcd-listen), absent when it serves none.
	Etcd string `json:"etcd,omitempty"`
	// Voter and Leader are filled in by GET /v1/cluster: a member that
	// is not a voter is a non-voter.
	Voter  bool `json:"voter,omitempty"`
	Leader bool `json:"leader,omitempty"`
	// LastContact is filled in by the leader's GET /v1/cluster for the
	// other members, voters and non-voters: how long ago the member last
	// confirmed, in the lease exchange, that it follows this leader. Absent when the member never
	// has in this leader's life, and on followers.
	LastContact *Duration `json:"last_contact,omitempty"`
	// AppliedIndex is filled in by the leader's GET /v1/cluster: its own
	// applied index for itself, and for each other member the applied
	// index it reported with its last promise in the lease exchange (so
	// the leader's own minus it is how far the member lags). Absent when
	// the member never reported in this leader's life, and on followers.
	AppliedIndex *uint64 `json:"applied_index,omitempty"`
}

// AddMember is the body of POST /v1/cluster/members: the member's id and
// addresses, and its role: voter absent or true adds a voter, false a
// non-voter (it replicates the log and votes for nothing). A member that
// is in the configuration already keeps its role.
type AddMember struct {
	Member
	Voter *bool `json:"voter,omitempty"`
}

// TransferRequest is the body of POST /v1/cluster/leader-transfer. To
// names the voter to hand leadership to; empty lets the leader pick the
// voter whose log is most up to date.
type TransferRequest struct {
	To string `json:"to,omitempty"`
}

// TransferResponse answers POST /v1/cluster/leader-transfer once the old
// leader has stepped down: From is the node that led, Leader the one that
// leads now (as the old leader sees it).
type TransferResponse struct {
	From   string     `json:"from"`
	Leader LeaderInfo `json:"leader"`
}

// LeaderInfo names the current leader.
type LeaderInfo struct {
	ID   string `json:"id"`
	HTTP string `json:"http"`
}

// Cluster answers GET /v1/cluster.
type Cluster struct {
	Mode         string      `json:"mode"`
	NodeID       string      `json:"node_id"`
	State        string      `json:"state"`
	Leader       *LeaderInfo `json:"leader"`
	Term         uint64      `json:"term"`
	CommitIndex  uint64      `json:"commit_index"`
	AppliedIndex uint64      `json:"applied_index"`
	// LastLogIndex is the index of the node's last log entry, committed or
	// not (Raft mode): what a vote request compares.
	LastLogIndex         uint64    `json:"last_log_index,omitempty"`
	MasterLeaseRemaining *Duration `json:"master_lease_remaining,omitempty"`
	// MasterLeaseFailures counts the master-lease renewals that failed to
	// confirm a quorum while this node led, since it started: each is a
	// moment the lease was not extended, and, if the next ones failed too
	// until it ran out, a pause in serving. Zero means the node never
	// came near losing its lease.
	MasterLeaseFailures uint64 `json:"master_lease_failures"`
	// Version is the lockd version this node runs (lockd version). A
	// node does not learn the versions of the others: ask each one.
	Version string `json:"version,omitempty"`
	// StorageProblem is set while writes to this node's data dir fail
	// (a full disk among them): the node cannot lead or follow then.
	StorageProblem *StorageProblem `json:"storage_problem,omitempty"`
	Members        []Member        `json:"members"`
	// Coordinator, Epoch and Election are set in the classic modes only.
	Coordinator string         `json:"coordinator,omitempty"`
	Epoch       uint64         `json:"epoch,omitempty"`
	Election    *ElectionStats `json:"election,omitempty"`
}

// StorageProblem says why writes to a node's data dir fail, since when.
type StorageProblem struct {
	// Reason is CodeStorageFull (no space left on the disk, or quota) or
	// CodeStorageError (any other write error).
	Reason string    `json:"reason"`
	Error  string    `json:"error"`
	Since  time.Time `json:"since"`
}

// ElectionStats are a classic elector's counters, in GET /v1/cluster.
type ElectionStats struct {
	Algorithm        string            `json:"algorithm"`
	InElection       bool              `json:"in_election"`
	ElectionsStarted uint64            `json:"elections_started"`
	LastElection     Duration          `json:"last_election"`
	Sent             map[string]uint64 `json:"sent"`
	Received         map[string]uint64 `json:"received"`
	Group            []string          `json:"group,omitempty"`
	// Role (emergent only) is the node's state: master, slave, candidate
	// or idle; Slaves, the slave pool it counts.
	Role   string   `json:"role,omitempty"`
	Slaves []string `json:"slaves,omitempty"`
}

// SessionList answers GET /v1/sessions: one page of the sessions, sorted
// by ID. The list types keep the top level an object, so that fields can
// be added later without breaking clients.
//
// Next is set when more follow: the cursor to pass as ?after= for the next
// page (the last ID of this one). Index is the index the page was read at;
// each page is read on its own, so a session created or ended while a
// client walks the pages may appear in none or in its old state.
type SessionList struct {
	Sessions []Session `json:"sessions"`
	Index    uint64    `json:"index"`
	Next     string    `json:"next,omitempty"`
}

// LockList answers GET /v1/locks: one page of the existing locks, sorted by
// name; Next as in SessionList.
type LockList struct {
	Locks []Lock `json:"locks"`
	Index uint64 `json:"index"`
	Next  string `json:"next,omitempty"`
}

// ElectionList answers GET /v1/elections: one page of the elections that
// exist (led, campaigned for or in a lock-delay), sorted by name; Next as
// in SessionList.
type ElectionList struct {
	Elections []Election `json:"elections"`
	Index     uint64     `json:"index"`
	Next      string     `json:"next,omitempty"`
}

// ListOptions are the query parameters of a list (GET /v1/sessions,
// /v1/locks, /v1/elections): the read options, and which page.
type ListOptions struct {
	ReadOptions
	// Limit is the most items a page holds: 1..MaxListLimit. The server
	// takes DefaultListLimit when the query names none.
	Limit int
	// After is the cursor: the page starts after this ID or name ("" for
	// the first page). It need not name an item that exists.
	After string
}

// ReadOptions are the query parameters every GET of state understands
// (?consistent, ?stale, ?index, ?wait).
type ReadOptions struct {
	// Consistent asks the leader to confirm a quorum for this read.
	Consistent bool
	// Stale lets any node answer from its own state, possibly behind.
	Stale bool
	// Index and Wait make the read a blocking query: it returns as soon as
	// the object's modify index is greater than Index, or after Wait with the
	// current state. Wait is zero for a plain read.
	Index uint64
	Wait  time.Duration
}

// HeaderLeader is set by the leader, on every answer to a request it
// served itself (sent to it directly or forwarded by a follower), to its
// own HTTP address, so that a client that talked to a follower can go to
// the leader directly next time and save the hop.
const HeaderLeader = "X-Lockd-Leader"

// HeaderWait says, on a blocking acquire or campaign, the wait its body
// asks for ("30s", "0s"), so that a follower that forwards the request
// bounds it without decoding the body (it never does). The node that
// serves the request refuses it (400) if the two disagree. A request
// without it is bounded on a follower as if it asked for api.MaxWait.
const HeaderWait = "X-Lockd-Wait"

// LeaderAddr names the node a follower forwards leader-only requests to,
// as the node serving the API knows it. The zero LeaderAddr means no
// leader is known. It is not a wire type: Service implementations return
// it, and it lives here so that they need not import httpapi.
type LeaderAddr struct {
	// ID is the leader's node id.
	ID string
	// Peer is the leader's peer address as Raft knows it; requests are
	// forwarded there over the peer port. Empty when the node knows no
	// peer address to forward to (the classic modes): HTTP is used then.
	Peer string
	// HTTP is the leader's HTTP address, when the node knows it without
	// a look-up; empty in Raft mode, where Peer is always set.
	HTTP string
}

// Known reports whether a leader is named.
func (l LeaderAddr) Known() bool { return l.ID != "" || l.Peer != "" || l.HTTP != "" }

// Bounds of a token's expiration_ttl.
const (
	MinTokenTTL = time.Second
	MaxTokenTTL = 10 * 365 * 24 * time.Hour
)

// CreateTokenRequest is the body of POST /v1/acl/tokens: an admin token,
// or one with rules (acl.Rule: kind "lock", "election" or "key", a name
// or key prefix, access "read" or "write").
type CreateTokenRequest struct {
	Description string     `json:"description,omitempty"`
	Admin       bool       `json:"admin,omitempty"`
	Rules       []acl.Rule `json:"rules,omitempty"`
	// ExpirationTTL, if set, makes the token expire that long after its
	// creation (MinTokenTTL to MaxTokenTTL), as Consul's expiration_ttl.
	ExpirationTTL Duration `json:"expiration_ttl,omitempty"`
	// MaxKeys and MaxBytes bound the keys the token owns (those it wrote
	// last and that exist), in keys and in bytes of key and value: a
	// write past either is refused quota_exceeded. 0 is no bound; only a
	// token with rules takes them.
	MaxKeys  int64 `json:"max_keys,omitempty"`
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// Token describes an ACL token. Secret is set only in the answer to the
// request that created it: the cluster stores only its hash.
type Token struct {
	AccessorID  string     `json:"accessor_id"`
	Secret      string     `json:"secret,omitempty"`
	Description string     `json:"description,omitempty"`
	Admin       bool       `json:"admin,omitempty"`
	Rules       []acl.Rule `json:"rules"`
	CreateIndex uint64     `json:"create_index"`
	// ExpirationTime is when the token stops being accepted (the
	// creating leader's wall clock plus the expiration TTL); absent for a
	// token that does not expire.
	ExpirationTime *time.Time `json:"expiration_time,omitempty"`
	// MaxKeys and MaxBytes are the token's limits on keys (0: none).
	MaxKeys  int64 `json:"max_keys,omitempty"`
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Usage is what the token owns of the namespace now, in the answers
	// of GET /v1/acl/tokens and GET /v1/acl/tokens/self.
	Usage *KeyUsage `json:"usage,omitempty"`
}

// KeyUsage is what an ACL token owns of the namespace: the keys it wrote
// last and that still exist, and their bytes of key and value.
type KeyUsage struct {
	Keys  int64 `json:"keys"`
	Bytes int64 `json:"bytes"`
}

// TokenList answers GET /v1/acl/tokens.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// TokenOf returns t as the API shows it: never its hash.
func TokenOf(t acl.Token) Token {
	rules := t.Rules
	if rules == nil {
		rules = []acl.Rule{}
	}
	return Token{AccessorID: t.AccessorID, Description: t.Description, Admin: t.Admin, Rules: rules, CreateIndex: t.CreateIndex,
		ExpirationTime: t.ExpiresAt, MaxKeys: t.MaxKeys, MaxBytes: t.MaxBytes}
}
