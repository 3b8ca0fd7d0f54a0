package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/lockd/lockd/api"
)

// status is the body of /healthz and /readyz.
type status struct {
	Status string `json:"status"`
}

// cluster serves GET /v1/cluster, always from this node's own view, with
// the version the node runs.
func (s *Server) cluster(r *http.Request) (any, error) {
	c, err := s.svc.Cluster(r.Context())
	c.Version = s.version
	return c, err
}

// addMember serves POST /v1/cluster/members. The body's voter field, if
// present and false, adds a non-voter; the service reads the role from
// the member's Voter.
func (s *Server) addMember(r *http.Request) (any, error) {
	var req api.AddMember
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	m := req.Member
	m.Voter = req.Voter == nil || *req.Voter
	if err := fillMember(&m); err != nil {
		return nil, err
	}
	if err := s.svc.AddMember(r.Context(), m); err != nil {
		return nil, err
	}
	// The node logs a change of the configuration itself, once: a
	// repeated registration changes nothing.
	s.log.Debug("member added", "id", m.ID, "peer", m.Peer, "http", m.HTTP, "voter", m.Voter)
	return struct{}{}, nil
}

// removeMember serves DELETE /v1/cluster/members/{id}.
func (s *Server) removeMember(r *http.Request) (any, error) {
	id := mux.Vars(r)["id"]
	if err := s.svc.RemoveMember(r.Context(), id); err != nil {
		return nil, err
	}
	s.log.Debug("member removed", "id", id)
	return struct{}{}, nil
}

// transferLeader serves POST /v1/cluster/leader-transfer. The body is
// optional: none, or {}, lets the leader pick the voter.
func (s *Server) transferLeader(r *http.Request) (any, error) {
	var req api.TransferRequest
	if err := decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	res, err := s.svc.TransferLeadership(r.Context(), req.To)
	if err != nil {
		return nil, err
	}
	s.log.Info("leadership transferred", "from", res.From, "to", res.Leader.ID)
	return res, nil
}

// removed answers r with the node's removal, if the node was removed from
// the cluster, and reports whether it did. Only /healthz is still served:
// the process is up, it just is no member.
func (s *Server) removed(w http.ResponseWriter, r *http.Request, rt route) bool {
	if rt.path == "/healthz" {
		return false
	}
	err := s.svc.Removal()
	if err == nil {
		return false
	}
	s.writeError(w, r, err)
	return true
}

// healthz serves GET /healthz: the process is up and serving HTTP.
func (s *Server) healthz(*http.Request) (any, error) {
	return status{Status: "ok"}, nil
}

// readyz serves GET /readyz: 200 when the node can serve a default read now,
// 503 otherwise whatever the error's code, because probes look only at the
// status. The body carries the reason as any error would.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	err := s.svc.Ready(r.Context())
	if err == nil {
		s.writeJSON(w, http.StatusOK, status{Status: "ready"})
		return
	}
	s.writeErrorStatus(w, r, http.StatusServiceUnavailable, publicError(err), err)
}

// faultList is the answer of every fault route.
func (s *Server) faultList() api.FaultList {
	return api.FaultList{Faults: s.faults.Faults(), Refused: s.faults.Refused()}
}

// listFaults serves GET /v1/debug/faults.
func (s *Server) listFaults(*http.Request) (any, error) {
	return s.faultList(), nil
}

// setFault serves POST /v1/debug/faults. The server checks the delay's
// bounds; the injector validates direction and rule, and whatever it
// rejects is the client's mistake.
func (s *Server) setFault(r *http.Request) (any, error) {
	var req api.FaultRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, value string }{{"peer", req.Peer}, {"direction", req.Direction}, {"rule", req.Rule}} {
		if err := required(f.name, f.value); err != nil {
			return nil, err
		}
	}
	if err := checkFaultDelay(req.Rule, req.Delay.D()); err != nil {
		return nil, err
	}
	if err := s.faults.SetFault(req.Peer, req.Direction, req.Rule, req.Delay.D()); err != nil {
		return nil, badRequest("%s", err.Error())
	}
	s.log.Debug("fault injected", "peer", req.Peer, "direction", req.Direction, "rule", req.Rule, "delay", req.Delay.D())
	return s.faultList(), nil
}

// checkFaultDelay requires a delay within bounds for rule "delay" and none
// for any other rule.
func checkFaultDelay(rule string, d time.Duration) error {
	switch {
	case !strings.EqualFold(strings.TrimSpace(rule), "delay"):
		if d != 0 {
			return badRequest("delay is only for rule \"delay\", not %q", rule)
		}
		return nil
	case d == 0:
		return badRequest("delay is required with rule \"delay\"")
	}
	return checkRange("delay", d, api.MinFaultDelay, api.MaxFaultDelay)
}

// healAll serves DELETE /v1/debug/faults.
func (s *Server) healAll(*http.Request) (any, error) {
	s.faults.Heal("")
	s.log.Debug("faults healed", "peer", "all")
	return s.faultList(), nil
}

// healPeer serves DELETE /v1/debug/faults/{peer}.
func (s *Server) healPeer(r *http.Request) (any, error) {
	peer := mux.Vars(r)["peer"]
	s.faults.Heal(peer)
	s.log.Debug("faults healed", "peer", peer)
	return s.faultList(), nil
}

// getClock serves GET /v1/debug/clock.
func (s *Server) getClock(*http.Request) (any, error) {
	off, rate := s.clock.Skew()
	o, step := api.Duration(off), api.Duration(s.clock.WallStep())
	return api.ClockSkew{Offset: &o, Rate: &rate, WallStep: &step}, nil
}

// setClock serves POST /v1/debug/clock. Everything is checked before
// anything changes.
func (s *Server) setClock(r *http.Request) (any, error) {
	var req api.ClockSkew
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	skew := req.Offset != nil || req.Rate != nil || req.WallStep == nil
	var offset time.Duration
	rate := 1.0
	if req.Offset != nil {
		offset = req.Offset.D()
	}
	if req.Rate != nil && *req.Rate != 0 {
		rate = *req.Rate
	}
	if rate < 0 || rate > 100 {
		return nil, badRequest("rate %v out of range: want 0 < rate <= 100 (1 is real time; 0 or absent means 1)", rate)
	}
	if req.WallStep != nil {
		if step := req.WallStep.D(); step < -api.MaxWallStep || step > api.MaxWallStep {
			return nil, badRequest("wall_step %v out of range: want between -%v and %v", step, api.MaxWallStep, api.MaxWallStep)
		}
	}
	if skew {
		s.clock.Set(offset, rate)
		s.log.Warn("clock skewed", "offset", offset, "rate", rate)
	}
	if req.WallStep != nil {
		s.clock.SetWallStep(req.WallStep.D())
		s.log.Warn("wall clock stepped", "wall_step", req.WallStep.D())
	}
	return s.getClock(r)
}
