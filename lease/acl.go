package lease

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
	"github.com/lockd/lockd/fsm"
)

// ResolveToken returns the ACL token whose secret is secret, from this
// node's state. A token revoked by an entry this node has applied is not
// found; a follower that lags behind may still find it for its stale reads
// until it applies the revocation (the leader serves everything else).
//
// A token past its expiry, by this node's wall clock, is not found either,
// from that instant on, before the leader's revoke entry deletes it.
func (n *Node) ResolveToken(secret string) (acl.Token, bool) {
	tok, ok := n.fsm.TokenBySecret(secret)
	if !ok || tok.Expired(wallNow(n.clock)) {
		return acl.Token{}, false
	}
	return tok, true
}

// SessionOwner returns the accessor id of the token that created session
// id, and whether the session exists in this node's state.
func (n *Node) SessionOwner(id string) (string, bool) {
	s, ok := n.fsm.Session(id)
	return s.Owner, ok
}

// CreateToken stores a new ACL token and returns it with its secret, the
// only time the secret leaves the node: the log and the state hold its
// hash.
func (n *Node) CreateToken(ctx context.Context, req api.CreateTokenRequest) (api.Token, error) {
	if _, err := n.leading(); err != nil {
		return api.Token{}, err
	}
	secret := newSecret()
	tok := acl.Token{AccessorID: newAccessorID(), Hash: acl.Hash(secret), Description: req.Description, Admin: req.Admin, Rules: req.Rules,
		MaxKeys: req.MaxKeys, MaxBytes: req.MaxBytes}
	if ttl := req.ExpirationTTL.D(); ttl > 0 {
		// An absolute wall time in the entry: every replica stores the
		// same instant, whatever its own clock says.
		at := wallNow(n.clock).Add(ttl).UTC()
		tok.ExpiresAt = &at
	}
	res, err := n.propose(ctx, fsm.Command{Op: fsm.OpCreateToken, ACLToken: &tok})
	if err != nil {
		return api.Token{}, err
	}
	if res.Err != nil {
		return api.Token{}, aclErr(res.Err)
	}
	out := api.TokenOf(*res.ACLToken)
	out.Secret = secret
	return out, nil
}

// RevokeToken removes a token; from the entry on, requests with its
// secret are answered 401.
func (n *Node) RevokeToken(ctx context.Context, accessor string) error {
	if _, err := n.leading(); err != nil {
		return err
	}
	res, err := n.propose(ctx, fsm.Command{Op: fsm.OpRevokeToken, ACLToken: &acl.Token{AccessorID: accessor}})
	if err != nil {
		return err
	}
	return aclErr(res.Err)
}

// Tokens lists every token (never a secret or a hash), as the leader
// knows them.
func (n *Node) Tokens(ctx context.Context) (api.TokenList, error) {
	if _, err := n.leading(); err != nil {
		return api.TokenList{}, err
	}
	list := api.TokenList{Tokens: []api.Token{}}
	for _, t := range n.fsm.Tokens() {
		tok := api.TokenOf(t)
		tok.Usage = n.KeyUsage(t.AccessorID)
		list.Tokens = append(list.Tokens, tok)
	}
	return list, nil
}

// KeyUsage returns what the token with accessor id owns of the namespace
// (the keys it wrote last and that exist), in this node's state.
func (n *Node) KeyUsage(accessor string) *api.KeyUsage {
	u := n.fsm.KeyUsage(accessor)
	return &api.KeyUsage{Keys: u.Keys, Bytes: u.Bytes}
}

func aclErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fsm.ErrTokenNotFound):
		return api.Errorf(api.CodeNotFound, "no such token")
	case errors.Is(err, fsm.ErrTokenExists), errors.Is(err, fsm.ErrBadCommand):
		return api.Errorf(api.CodeBadRequest, "%v", err)
	}
	return err
}

// bootstrapACL creates the bootstrap admin token from the configured
// secret if the cluster never had one. Every node may be given the same
// secret: the state machine applies the first bootstrap only.
func (t *leaderTerm) bootstrapACL() {
	n := t.n
	if n.cfg.ACLBootstrapSecret == "" || n.fsm.ACLBootstrapped() {
		return
	}
	tok := acl.Token{AccessorID: newAccessorID(), Hash: acl.Hash(n.cfg.ACLBootstrapSecret), Description: "bootstrap", Admin: true}
	res, err := n.propose(t.ctx, fsm.Command{Op: fsm.OpBootstrapACL, ACLToken: &tok})
	switch {
	case err != nil:
		n.log.Warn("could not create the bootstrap ACL token; the next leader will try", "err", err)
	case res.Err != nil:
		n.log.Warn("bootstrap ACL token refused", "err", res.Err)
	case res.ACLToken != nil:
		n.log.Info("bootstrap ACL token created", "accessor", res.ACLToken.AccessorID)
	}
}

// tokenReapEvery is how often the leader looks for expired tokens to
// delete. Their expiry does not wait for it: from the instant it passes,
// ResolveToken refuses them.
const tokenReapEvery = time.Second

// tokenReaper deletes, with a revoke entry each, the tokens whose expiry
// has passed by the leader's wall clock, so that expired tokens leave the
// table (and the token list) on every replica at the same point of the log.
func (t *leaderTerm) tokenReaper() {
	defer t.wg.Done()
	n := t.n
	ticker := time.NewTicker(tokenReapEvery)
	defer ticker.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-ticker.C:
		}
		if !t.leaseValid() {
			continue
		}
		for _, accessor := range n.fsm.ExpiredTokens(wallNow(n.clock)) {
			res, err := n.propose(t.ctx, fsm.Command{Op: fsm.OpRevokeToken, ACLToken: &acl.Token{AccessorID: accessor}})
			switch {
			case err != nil:
				n.log.Warn("could not delete an expired ACL token; retrying", "accessor", accessor, "err", err)
			case res.Err == nil:
				n.log.Info("ACL token expired and deleted", "accessor", accessor)
			}
			if err != nil || t.ctx.Err() != nil {
				break
			}
		}
	}
}

// newSecret returns a token secret: 32 random bytes, base64url.
func newSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("lease: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func newAccessorID() string { return randomHex(16) }
