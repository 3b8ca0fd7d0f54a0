package traffic

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/client"
)

// Access is what a client of the harness needs, besides the addresses, to
// reach a secured cluster: the TLS configuration of nodes that serve HTTPS
// and ask for client certificates (the CA, a client certificate), and the
// bearer token of a cluster with ACLs on. The zero Access is a plain
// cluster's: HTTP, no token.
type Access struct {
	TLS   *tls.Config
	Token string
}

// Client returns a client configured as cfg that speaks with a's TLS and
// token.
func (a Access) Client(cfg client.Config) (*client.Client, error) {
	cfg.TLS, cfg.BearerToken = a.TLS, a.Token
	return client.NewWithConfig(cfg)
}

// Tokens of the workloads on a cluster with ACLs on (Config.NewToken).
// None is an admin token: each carries rules for the names its holders
// use, and owns the sessions they create, so that every keepalive,
// acquire and release is checked against the session's owner, and every
// read shows full session ids only for the reader's own sessions.
//
//   - The lock workload has one token for all its workers and readers,
//     and the expiry workload, whose abandoned sessions take the lock
//     workload's locks, shares it: the readers compare the holders and
//     waiters they see with the workers' sessions, so they must own them
//     all. It may write every lock under "jepsen/" and read the election
//     (the per-node readers read it with ?stale). The fault schedules'
//     own readers and writers use it too (LockAccess).
//   - The election workload's workers and reader share a token that may
//     write only the election.
//   - Every holder of the fenced lock, in-process worker or child process,
//     has a token of its own that may write only that lock: their
//     sessions contend for it token against token.
var (
	lockRules     = []acl.Rule{{Kind: acl.Lock, Prefix: "jepsen/", Access: acl.Write}, {Kind: acl.Election, Prefix: "jepsen/", Access: acl.Read}}
	electionRules = []acl.Rule{{Kind: acl.Election, Prefix: ElectionName, Access: acl.Write}}
	fencedRules   = []acl.Rule{{Kind: acl.Lock, Prefix: FencedLock, Access: acl.Write}}
)

// newToken creates a token with rules through Config.NewToken and returns
// its secret, or "" when the cluster has no ACLs.
func (cfg Config) newToken(ctx context.Context, description string, rules []acl.Rule) (string, error) {
	if cfg.NewToken == nil {
		return "", nil
	}
	secret, err := cfg.NewToken(ctx, description, rules)
	if err != nil {
		return "", fmt.Errorf("traffic: token for %s: %w", description, err)
	}
	return secret, nil
}

// makeTokens creates the tokens of the lock and election workloads (see
// above); the fenced holders' are made as they start.
func (t *Traffic) makeTokens(ctx context.Context) error {
	var err error
	if t.lockToken, err = t.cfg.newToken(ctx, "jepsen lock workload", lockRules); err != nil {
		return err
	}
	if t.has(Elections) {
		t.electionToken, err = t.cfg.newToken(ctx, "jepsen election workload", electionRules)
	}
	return err
}

// LockAccess is how the lock workload reaches the cluster: its TLS and
// token. The fault schedules' own readers use it, since their reads are
// checked against the lock workload's sessions.
func (t *Traffic) LockAccess() Access { return t.access(t.lockToken) }

func (t *Traffic) access(token string) Access { return Access{TLS: t.cfg.TLS, Token: token} }

// transport returns the RoundTripper of a workload client that speaks with
// token: HTTPS on a cluster that serves it, and the token in every
// request's Authorization header.
func (t *Traffic) transport(token string) http.RoundTripper {
	if token == "" {
		return t.base
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return t.base.RoundTrip(r)
	})
}

// gated returns an HTTP client whose requests speak with token and pass
// the gate's cuts. It counts the keepalives of several sessions answered
// 200 (the stat "keepalives of several sessions"), so that a run shows
// that path ran.
func (t *Traffic) gated(token string) *http.Client {
	rt := t.gate.transport(t.transport(token))
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusOK && r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/keepalive" {
			t.count("keepalives of several sessions")
		}
		return resp, err
	})}
}

// baseTransport is what every workload client's requests go through:
// http.DefaultTransport on a plain cluster, a transport of its own with
// tlsConfig on one that serves HTTPS.
func baseTransport(tlsConfig *tls.Config) http.RoundTripper {
	if tlsConfig == nil {
		return http.DefaultTransport
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig.Clone() // net/http writes into it; tlsConfig is shared
	return tr
}
