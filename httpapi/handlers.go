package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/lockd/lockd/api"
)

// done turns the error of a call that returns nothing into a handler
// result: the empty object on success.
func done(err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// createSession serves POST /v1/sessions. Every field of the body, and the
// body itself, is optional.
func (s *Server) createSession(r *http.Request) (any, error) {
	// Pointers tell an absent duration (the default) from "0s" (refused
	// when out of range).
	var body struct {
		TTL       *api.Duration `json:"ttl"`
		LockDelay *api.Duration `json:"lock_delay"`
		Name      string        `json:"name"`
	}
	if err := decodeBody(r, &body, true); err != nil {
		return nil, err
	}
	req := api.CreateSessionRequest{LockDelay: body.LockDelay, Name: body.Name}
	if err := fillSession(&req, body.TTL); err != nil {
		return nil, err
	}
	if tok, on := principal(r); on {
		req.Owner = tok.AccessorID
	}
	return s.svc.CreateSession(r.Context(), req)
}

// keepAlive serves POST /v1/sessions/{id}/keepalive. A body is ignored.
func (s *Server) keepAlive(r *http.Request) (any, error) {
	id := mux.Vars(r)["id"]
	if err := s.ownSession(r, id); err != nil {
		return nil, err
	}
	return s.svc.KeepAlive(r.Context(), id)
}

// keepAliveMany serves POST /v1/sessions/keepalive: one request renews
// several sessions (a client with many sessions renews them together).
// Every id must be one the token may renew, or nothing is renewed.
func (s *Server) keepAliveMany(r *http.Request) (any, error) {
	var req api.KeepAliveManyRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.IDs) == 0 || len(req.IDs) > api.MaxKeepAliveIDs {
		return nil, api.Errorf(api.CodeBadRequest, "ids has %d sessions: give 1 to %d", len(req.IDs), api.MaxKeepAliveIDs)
	}
	for i, id := range req.IDs {
		if id == "" || len(id) > maxSessionIDLen {
			return nil, api.Errorf(api.CodeBadRequest, "ids[%d] is %d bytes long: a session id is 1 to %d", i, len(id), maxSessionIDLen)
		}
		if err := s.ownSession(r, id); err != nil {
			return nil, err
		}
	}
	return s.svc.KeepAliveMany(r.Context(), req.IDs)
}

// maxSessionIDLen bounds an id in a body: lockd's are 32 hex digits.
const maxSessionIDLen = 128

// destroySession serves DELETE /v1/sessions/{id}.
func (s *Server) destroySession(r *http.Request) (any, error) {
	id := mux.Vars(r)["id"]
	if err := s.ownSession(r, id); err != nil {
		return nil, err
	}
	return done(s.svc.DestroySession(r.Context(), id))
}

// getSession serves GET /v1/sessions/{id}.
func (s *Server) getSession(r *http.Request) (any, error) {
	opt, err := readOptions(r.URL.Query())
	if err != nil {
		return nil, err
	}
	id := mux.Vars(r)["id"]
	if err := s.ownSession(r, id); err != nil {
		return nil, err
	}
	return s.svc.Session(r.Context(), id, opt)
}

// listSessions serves GET /v1/sessions.
func (s *Server) listSessions(r *http.Request) (any, error) {
	opt, err := listOptions(r.URL.Query())
	if err != nil {
		return nil, err
	}
	return s.svc.Sessions(r.Context(), opt)
}

// acquire serves POST /v1/locks/{name}/acquire.
func (s *Server) acquire(r *http.Request) (any, error) {
	name, err := newName(r, "lock", api.LockVerbs)
	if err != nil {
		return nil, err
	}
	var req api.AcquireRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if err := fillAcquire(&req); err != nil {
		return nil, err
	}
	if err := checkHeaderWait(r, req.Wait.D()); err != nil {
		return nil, err
	}
	if err := s.ownSession(r, req.Session); err != nil {
		return nil, err
	}
	return s.svc.Acquire(r.Context(), name, req)
}

// release serves POST /v1/locks/{name}/release.
func (s *Server) release(r *http.Request) (any, error) {
	name, req, err := s.sessionCall(r)
	if err != nil {
		return nil, err
	}
	return done(s.svc.Release(r.Context(), name, req))
}

// check serves POST /v1/locks/{name}/check.
func (s *Server) check(r *http.Request) (any, error) {
	name, err := pathName(r)
	if err != nil {
		return nil, err
	}
	var req struct {
		Token *uint64 `json:"token"` // tells an absent token from 0
	}
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	switch {
	case req.Token == nil:
		return nil, badRequest("token is required")
	case *req.Token == 0:
		return nil, badRequest("token must be a positive integer, not 0: a fencing token is the index of a Raft entry, and the first is 1")
	}
	valid, err := s.svc.Check(r.Context(), name, *req.Token)
	if err != nil {
		return nil, err
	}
	return api.CheckResponse{Valid: valid}, nil
}

// getLock serves GET /v1/locks/{name}.
func (s *Server) getLock(r *http.Request) (any, error) {
	name, opt, err := namedRead(r)
	if err != nil {
		return nil, err
	}
	return s.svc.Lock(r.Context(), name, opt)
}

// listLocks serves GET /v1/locks.
func (s *Server) listLocks(r *http.Request) (any, error) {
	opt, err := listOptions(r.URL.Query())
	if err != nil {
		return nil, err
	}
	return s.svc.Locks(r.Context(), opt)
}

// campaign serves POST /v1/elections/{name}/campaign.
func (s *Server) campaign(r *http.Request) (any, error) {
	name, err := newName(r, "election", api.ElectionVerbs)
	if err != nil {
		return nil, err
	}
	var req api.CampaignRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if err := checkCampaign(&req); err != nil {
		return nil, err
	}
	if err := checkHeaderWait(r, req.Wait.D()); err != nil {
		return nil, err
	}
	if err := s.ownSession(r, req.Session); err != nil {
		return nil, err
	}
	return s.svc.Campaign(r.Context(), name, req)
}

// proclaim serves POST /v1/elections/{name}/proclaim.
func (s *Server) proclaim(r *http.Request) (any, error) {
	name, err := pathName(r)
	if err != nil {
		return nil, err
	}
	var req api.ProclaimRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if err := checkProclaim(&req); err != nil {
		return nil, err
	}
	if err := s.ownSession(r, req.Session); err != nil {
		return nil, err
	}
	return done(s.svc.Proclaim(r.Context(), name, req))
}

// resign serves POST /v1/elections/{name}/resign.
func (s *Server) resign(r *http.Request) (any, error) {
	name, req, err := s.sessionCall(r)
	if err != nil {
		return nil, err
	}
	return done(s.svc.Resign(r.Context(), name, req))
}

// getElection serves GET /v1/elections/{name}.
func (s *Server) getElection(r *http.Request) (any, error) {
	name, opt, err := namedRead(r)
	if err != nil {
		return nil, err
	}
	return s.svc.Election(r.Context(), name, opt)
}

// listElections serves GET /v1/elections.
func (s *Server) listElections(r *http.Request) (any, error) {
	opt, err := listOptions(r.URL.Query())
	if err != nil {
		return nil, err
	}
	return s.svc.Elections(r.Context(), opt)
}

// sessionCall parses the name and the {"session"} body of release and
// resign, and checks that the caller's token owns the session.
func (s *Server) sessionCall(r *http.Request) (string, api.SessionRequest, error) {
	var req api.SessionRequest
	name, err := pathName(r)
	if err != nil {
		return "", req, err
	}
	if err := decodeBody(r, &req, false); err != nil {
		return "", req, err
	}
	if err := required("session", req.Session); err != nil {
		return "", req, err
	}
	return name, req, s.ownSession(r, req.Session)
}

// namedRead parses the name and the read options of a GET of one object.
func namedRead(r *http.Request) (string, ReadOptions, error) {
	name, err := pathName(r)
	if err != nil {
		return "", ReadOptions{}, err
	}
	opt, err := readOptions(r.URL.Query())
	return name, opt, err
}
