package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/api"
)

// ACLService is what the HTTP layer needs to enforce ACLs. lease.Node
// implements it. ResolveToken and SessionOwner read the serving node's own
// state; the token routes are leader-only like every write.
type ACLService interface {
	// ResolveToken returns the token whose secret is secret.
	ResolveToken(secret string) (acl.Token, bool)
	// SessionOwner returns the owner of session id (the accessor id of the
	// token that created it), and whether the session exists.
	SessionOwner(id string) (owner string, exists bool)
	CreateToken(ctx context.Context, req api.CreateTokenRequest) (api.Token, error)
	RevokeToken(ctx context.Context, accessor string) error
	Tokens(ctx context.Context) (api.TokenList, error)
	// KeyUsage returns what the token with accessor id owns of the
	// namespace, in the serving node's own state.
	KeyUsage(accessor string) *api.KeyUsage
}

// need is what a route asks of the caller's token, given the request. A
// public route (health checks) asks nothing: need is nil.
type need func(r *http.Request) (acl.Action, error)

// Needs of the routing table.
var (
	// anyToken: any valid token.
	anyToken need = func(*http.Request) (acl.Action, error) { return acl.Anything, nil }
	// admin: an admin token.
	admin need = func(*http.Request) (acl.Action, error) { return acl.Action{Admin: true}, nil }
)

// onName returns the need of access on the lock or election named in the
// path.
func onName(kind acl.Kind, access acl.Access) need {
	return func(r *http.Request) (acl.Action, error) {
		name, err := pathName(r)
		if err != nil {
			return acl.Action{}, err
		}
		return acl.Action{Kind: kind, Name: name, Access: access}, nil
	}
}

type principalKey struct{}

// principal returns the token the request was authenticated with, and
// false when ACLs are off.
func principal(r *http.Request) (acl.Token, bool) {
	t, ok := r.Context().Value(principalKey{}).(acl.Token)
	return t, ok
}

// authorize authenticates r and checks its token against the route's need.
// It returns the request to serve, carrying the token, or the error to
// answer: 401 unauthorized without a valid token, 403 forbidden when the
// token does not allow the request. With ACLs off, or on a public route, r
// is returned as it is.
func (s *Server) authorize(r *http.Request, rt route) (*http.Request, error) {
	if s.acl == nil || rt.need == nil {
		return r, nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, api.Errorf(api.CodeUnauthorized, "ACLs are on: send a token as \"Authorization: Bearer SECRET\"")
	}
	secret, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || secret == "" || strings.ContainsAny(secret, " \t") {
		return nil, api.Errorf(api.CodeUnauthorized, "malformed Authorization header: want \"Bearer SECRET\"")
	}
	tok, ok := s.acl.ResolveToken(secret)
	if !ok {
		// Never echo the secret: it may be a real one mistyped.
		return nil, errUnknownToken
	}
	a, err := rt.need(r)
	if err != nil {
		return nil, err
	}
	if !acl.Allowed(tok, a) {
		return nil, forbidden(tok, a)
	}
	if isSessionCreate(rt) && !acl.CanWriteSomething(tok) {
		return nil, api.Errorf(api.CodeForbidden, "token %s has no write rule: it may not create sessions", tok.AccessorID)
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, tok)), nil
}

// errUnknownToken refuses a token this node does not know.
var errUnknownToken = api.Errorf(api.CodeUnauthorized, "unknown, revoked or expired token")

// isUnknownToken reports whether authorize refused err's request only
// because this node does not know its token.
func isUnknownToken(err error) bool { return err == errUnknownToken } //nolint:errorlint // authorize returns the sentinel itself

func isSessionCreate(rt route) bool {
	return rt.method == http.MethodPost && rt.path == "/v1/sessions"
}

func forbidden(tok acl.Token, a acl.Action) error {
	if a.Admin {
		return api.Errorf(api.CodeForbidden, "token %s is not an admin token", tok.AccessorID)
	}
	return api.Errorf(api.CodeForbidden, "token %s has no %s access to %s %q", tok.AccessorID, a.Access, a.Kind, a.Name)
}

// ownSession checks that the request's token may act on session id. A
// session that does not exist passes: the service answers session_expired.
func (s *Server) ownSession(r *http.Request, id string) error {
	tok, on := principal(r)
	if !on {
		return nil
	}
	owner, exists := s.acl.SessionOwner(id)
	if exists && !acl.Owns(tok, owner) {
		return api.Errorf(api.CodeForbidden, "session %s belongs to another token", redactID(id))
	}
	return nil
}

// redactID shortens a session id that the caller does not own: enough to
// tell sessions apart in a listing, not enough to use one.
func redactID(id string) string {
	if len(id) <= 8 {
		return "…"
	}
	return id[:8] + "…"
}

// filter removes from a read's answer what the caller's token may not see:
// objects outside its read rules, and the full ids of sessions it does not
// own. With ACLs off it returns body as it is.
func (s *Server) filter(r *http.Request, body any) any {
	tok, on := principal(r)
	if !on || tok.Admin {
		return body
	}
	v := viewer{s: s, tok: tok, owners: map[string]string{}}
	if out, ok := v.kvView(body); ok {
		return out
	}
	switch b := body.(type) {
	case api.Session:
		return v.session(b)
	case api.SessionList:
		out := b
		out.Sessions = make([]api.Session, len(b.Sessions))
		for i, x := range b.Sessions {
			out.Sessions[i] = v.session(x)
		}
		return out
	case api.Lock:
		return v.lock(b)
	case api.LockList:
		out := b
		out.Locks = readable(v, acl.Lock, b.Locks, func(l api.Lock) string { return l.Name }, v.lock)
		return out
	case api.Election:
		return v.election(b)
	case api.ElectionList:
		out := b
		out.Elections = readable(v, acl.Election, b.Elections, func(e api.Election) string { return e.Name }, v.election)
		return out
	}
	return body
}

// readable returns the objects of kind in list that v's token may read,
// each as view shows it; never nil, so that JSON shows an empty list.
func readable[T any](v viewer, kind acl.Kind, list []T, name func(T) string, view func(T) T) []T {
	out := []T{}
	for _, x := range list {
		if v.reads(kind, name(x)) {
			out = append(out, view(x))
		}
	}
	return out
}

// viewer filters for one token, remembering session owners it looked up.
type viewer struct {
	s      *Server
	tok    acl.Token
	owners map[string]string
}

func (v viewer) reads(kind acl.Kind, name string) bool {
	return acl.Allowed(v.tok, acl.Action{Kind: kind, Name: name, Access: acl.Read})
}

// id returns id as the token may see it.
func (v viewer) id(id string) string {
	if id == "" {
		return id
	}
	owner, ok := v.owners[id]
	if !ok {
		owner, _ = v.s.acl.SessionOwner(id)
		v.owners[id] = owner
	}
	if acl.Owns(v.tok, owner) {
		return id
	}
	return redactID(id)
}

func (v viewer) session(x api.Session) api.Session {
	x.ID = v.id(x.ID)
	x.Locks = slices.DeleteFunc(slices.Clone(x.Locks), func(n string) bool { return !v.reads(acl.Lock, n) })
	x.Elections = slices.DeleteFunc(slices.Clone(x.Elections), func(n string) bool { return !v.reads(acl.Election, n) })
	return x
}

func (v viewer) lock(l api.Lock) api.Lock {
	l.Holders = slices.Clone(l.Holders)
	for i := range l.Holders {
		l.Holders[i].Session = v.id(l.Holders[i].Session)
	}
	l.Waiters = slices.Clone(l.Waiters)
	for i := range l.Waiters {
		l.Waiters[i].Session = v.id(l.Waiters[i].Session)
	}
	return l
}

func (v viewer) election(e api.Election) api.Election {
	e.Session = v.id(e.Session)
	e.Waiters = slices.Clone(e.Waiters)
	for i := range e.Waiters {
		e.Waiters[i].Session = v.id(e.Waiters[i].Session)
	}
	return e
}

// createToken serves POST /v1/acl/tokens.
func (s *Server) createToken(r *http.Request) (any, error) {
	var req api.CreateTokenRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if !req.Admin && len(req.Rules) == 0 {
		return nil, badRequest("a token needs rules, or admin: true")
	}
	if req.Admin && len(req.Rules) > 0 {
		return nil, badRequest("an admin token may do everything: give it no rules")
	}
	if err := acl.Validate(acl.Token{Description: req.Description, Admin: req.Admin, Rules: req.Rules, MaxKeys: req.MaxKeys, MaxBytes: req.MaxBytes}); err != nil {
		return nil, badRequest("%v", err)
	}
	if ttl := req.ExpirationTTL.D(); ttl != 0 && (ttl < api.MinTokenTTL || ttl > api.MaxTokenTTL) {
		return nil, badRequest("expiration_ttl %v: want %v to %v, or none for a token that does not expire", ttl, api.MinTokenTTL, api.MaxTokenTTL)
	}
	return s.acl.CreateToken(r.Context(), req)
}

// listTokens serves GET /v1/acl/tokens.
func (s *Server) listTokens(r *http.Request) (any, error) {
	return s.acl.Tokens(r.Context())
}

// selfToken serves GET /v1/acl/tokens/self: the caller's own token.
func (s *Server) selfToken(r *http.Request) (any, error) {
	tok, _ := principal(r)
	out := api.TokenOf(tok)
	out.Usage = s.acl.KeyUsage(tok.AccessorID)
	return out, nil
}

// revokeToken serves DELETE /v1/acl/tokens/{accessor}.
func (s *Server) revokeToken(r *http.Request) (any, error) {
	return done(s.acl.RevokeToken(r.Context(), mux.Vars(r)["accessor"]))
}
