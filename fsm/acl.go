package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockd/lockd/acl"
)

// ACL errors in Result.Err.
var (
	// ErrTokenExists: a create-token named an accessor or a secret already in use.
	ErrTokenExists = errors.New("fsm: token already exists")
	// ErrTokenNotFound: a revoke-token named an accessor that does not exist.
	ErrTokenNotFound = errors.New("fsm: token not found")
)

// maxAccessorLen bounds an accessor id, and so the owner of a key.
const maxAccessorLen = 64

// MaxTokens bounds the number of tokens, so that the table stays small
// enough to copy whole into every snapshot.
const MaxTokens = 10000

// tokens is the replicated ACL table: every token by accessor and by the
// hash of its secret, and whether the bootstrap token was created (it is
// created at most once in a cluster's life, even if revoked later).
type tokens struct {
	byAccessor   map[string]acl.Token
	byHash       map[string]string
	bootstrapped bool
	// owned counts the live sessions of each owner (derived from the
	// sessions; not in snapshots).
	owned map[string]int
}

func newTokens() tokens {
	return tokens{byAccessor: map[string]acl.Token{}, byHash: map[string]string{}, owned: map[string]int{}}
}

// own counts a session of owner in (d = 1) or out (d = -1).
func (t *tokens) own(owner string, d int) {
	if owner == "" {
		return
	}
	if t.owned[owner] += d; t.owned[owner] <= 0 {
		delete(t.owned, owner)
	}
}

func (t *tokens) add(tok acl.Token) {
	t.byAccessor[tok.AccessorID] = tok
	t.byHash[tok.Hash] = tok.AccessorID
}

// sorted returns the tokens in accessor order.
func (t *tokens) sorted() []acl.Token {
	out := make([]acl.Token, 0, len(t.byAccessor))
	for _, tok := range t.byAccessor {
		out = append(out, tok)
	}
	slices.SortFunc(out, func(a, b acl.Token) int { return strings.Compare(a.AccessorID, b.AccessorID) })
	return out
}

// checkToken refuses a token the FSM must not store.
func checkToken(op Op, tok *acl.Token) *Result {
	switch {
	case tok == nil:
		r := refuse("%v: no token", op)
		return &r
	case tok.AccessorID == "" || len(tok.AccessorID) > maxAccessorLen:
		r := refuse("%v: accessor id %q", op, tok.AccessorID)
		return &r
	case len(tok.Hash) != 64 || strings.Trim(tok.Hash, "0123456789abcdef") != "":
		r := refuse("%v: hash is not a hex SHA-256", op)
		return &r
	}
	if err := acl.Validate(*tok); err != nil {
		r := refuse("%v: %v", op, err)
		return &r
	}
	return nil
}

// createToken runs OpCreateToken and OpBootstrapACL. A bootstrap applies
// once in the cluster's life: later ones change nothing and answer the
// token that exists (or none, if it was revoked since).
func (st *state) createToken(o op, c Command) Result {
	if r := checkToken(c.Op, c.ACLToken); r != nil {
		return *r
	}
	t := &st.tokens
	if c.Op == OpBootstrapACL {
		if t.bootstrapped {
			return Result{}
		}
		if !c.ACLToken.Admin {
			return refuse("%v: the bootstrap token must be an admin token", c.Op)
		}
	}
	if _, ok := t.byAccessor[c.ACLToken.AccessorID]; ok {
		return Result{Err: fmt.Errorf("%w: accessor %q", ErrTokenExists, c.ACLToken.AccessorID)}
	}
	if _, ok := t.byHash[c.ACLToken.Hash]; ok {
		return Result{Err: fmt.Errorf("%w: that secret is in use", ErrTokenExists)}
	}
	if len(t.byAccessor) >= MaxTokens {
		return refuse("%v: %d tokens exist, the most the cluster keeps", c.Op, MaxTokens)
	}
	tok := *c.ACLToken
	tok.Rules = slices.Clone(tok.Rules)
	if tok.ExpiresAt != nil {
		at := *tok.ExpiresAt
		tok.ExpiresAt = &at
	}
	tok.CreateIndex = o.index
	t.add(tok)
	if c.Op == OpBootstrapACL {
		t.bootstrapped = true
	}
	return Result{ACLToken: &tok}
}

// revokeToken runs OpRevokeToken. The sessions the token created stay
// (they are still kept alive by no one and expire, unless an admin token
// destroys them first).
func (st *state) revokeToken(c Command) Result {
	if c.ACLToken == nil || c.ACLToken.AccessorID == "" {
		return refuse("%v: no accessor id", c.Op)
	}
	t := &st.tokens
	tok, ok := t.byAccessor[c.ACLToken.AccessorID]
	if !ok {
		return Result{Err: fmt.Errorf("%w: accessor %q", ErrTokenNotFound, c.ACLToken.AccessorID)}
	}
	delete(t.byAccessor, tok.AccessorID)
	delete(t.byHash, tok.Hash)
	return Result{ACLToken: &tok}
}

// TokenBySecret returns the token whose secret is secret.
func (f *FSM) TokenBySecret(secret string) (acl.Token, bool) {
	h := acl.Hash(secret)
	f.mu.RLock()
	defer f.mu.RUnlock()
	id, ok := f.st.tokens.byHash[h]
	if !ok {
		return acl.Token{}, false
	}
	tok := f.st.tokens.byAccessor[id]
	// The map lookup found it by hash; compare once more in constant time.
	return tok, acl.Matches(tok, secret)
}

// Tokens returns every token, in accessor order.
func (f *FSM) Tokens() []acl.Token {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.tokens.sorted()
}

// ExpiredTokens returns the accessors of the tokens whose expiry is not
// after now, in accessor order: what the leader deletes. The FSM decides
// nothing by time; the leader asks with its own clock.
func (f *FSM) ExpiredTokens(now time.Time) []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []string
	for id, tok := range f.st.tokens.byAccessor {
		if tok.Expired(now) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ACLBootstrapped reports whether the bootstrap token was ever created.
func (f *FSM) ACLBootstrapped() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.tokens.bootstrapped
}

// OwnedSessions returns how many live sessions owner created.
func (f *FSM) OwnedSessions(owner string) int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.tokens.owned[owner]
}

// Usage returns how many locks and elections session holds or waits for,
// and how many sessions wait for the lock (or, with election, the
// election) name: what the leader's per-session and per-object limits
// count.
func (f *FSM) Usage(session string, election bool, name string) (objects, waiters int) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, sp := range []*space{f.st.locks, f.st.elections} {
		objects += len(sp.held[session]) + len(sp.waiting[session])
	}
	if l, ok := f.st.space(election).objs.get(name); ok {
		waiters = len(l.Waiters)
	}
	return objects, waiters
}
