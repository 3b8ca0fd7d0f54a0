package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/lockd/lockd/client"
)

// The store's HTTP API. Every body is JSON; errors are
// {"error": "<sentence>", "code": "<code>"}, as in lockd itself.
//
//	POST /takeover {"token","worker"}                -> 200 {"pending":[task...]} | 409 stale_token
//	POST /results  {"task","result","token","worker"} -> 200 {"task","outcome":"accepted"|"duplicate"} | 409 stale_token
//	GET  /status                                     -> 200 status
//	GET  /results                                    -> 200 {"accepted":[...],"rejected":[...]}

// Outcomes of POST /results that the store answers with 200.
const (
	outcomeAccepted  = "accepted"
	outcomeDuplicate = "duplicate" // the task was done already; the result is ignored
)

// codeStaleToken is the error code of a request whose token is lower than
// one the store has already admitted.
const codeStaleToken = "stale_token"

// maxBody bounds a request body.
const maxBody = 64 << 10

// result is one task's result as a coordinator posts it.
type result struct {
	Task   int    `json:"task"`
	Result string `json:"result"`
	Token  uint64 `json:"token"`
	Worker string `json:"worker"`
}

type takeoverRequest struct {
	Token  uint64 `json:"token"`
	Worker string `json:"worker"`
}

type takeoverResponse struct {
	Pending []int `json:"pending"`
}

type postResponse struct {
	Task    int    `json:"task"`
	Outcome string `json:"outcome"`
}

// status is the answer of GET /status.
type status struct {
	Tasks         int    `json:"tasks"`
	Done          int    `json:"done"`
	Duplicates    int    `json:"duplicates"`
	StaleRejected int    `json:"stale_rejected"`
	Token         uint64 `json:"token"`       // the highest token admitted
	Coordinator   string `json:"coordinator"` // the worker that showed it
}

// resultsResponse is the answer of GET /results: the accepted results in
// the order they were accepted, and the results refused as stale.
type resultsResponse struct {
	Accepted []result `json:"accepted"`
	Rejected []result `json:"rejected"`
}

type apiError struct {
	Message string `json:"error"`
	Code    string `json:"code"`
}

// store holds tasks 1..N and their results, and admits coordinators by
// their election token.
//
// Every request that carries a token goes through the fence and then acts,
// both under mu, so that no stale write can slip in between the check and
// the act (see client.Fence). A coordinator's first request is a takeover:
// it raises the fence to its token before it reads what is pending, so a
// result an older coordinator sends after that read is refused, and every
// result accepted before it is already counted as done. Between them, that
// is why no task is lost and none is done twice.
type store struct {
	election string // the fence's key: tokens are only comparable within one election
	log      *slog.Logger
	mux      *http.ServeMux

	mu          sync.Mutex
	fence       client.Fence
	done        []bool // done[k] for task k; done[0] is unused
	accepted    []result
	rejected    []result
	duplicates  int
	coordinator string
}

// newStore returns a store of tasks 1..tasks that fences on the tokens of
// election.
func newStore(tasks int, election string, log *slog.Logger) *store {
	s := &store{election: election, log: log, mux: http.NewServeMux(), done: make([]bool, tasks+1)}
	s.mux.HandleFunc("POST /takeover", s.handleTakeover)
	s.mux.HandleFunc("POST /results", s.handlePost)
	s.mux.HandleFunc("GET /status", s.handleStatus)
	s.mux.HandleFunc("GET /results", s.handleResults)
	return s
}

func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// admit passes token through the fence and notes a new coordinator. The
// caller holds mu.
func (s *store) admit(token uint64, worker string) error {
	prev := s.fence.Highest(s.election)
	if err := s.fence.Admit(s.election, token); err != nil {
		return err
	}
	if token > prev {
		s.coordinator = worker
		s.log.Info("new coordinator", "worker", worker, "token", token)
	}
	return nil
}

func (s *store) handleTakeover(w http.ResponseWriter, r *http.Request) {
	var req takeoverRequest
	if !decode(w, r, &req) {
		return
	}
	s.mu.Lock()
	if err := s.admit(req.Token, req.Worker); err != nil {
		s.mu.Unlock()
		s.log.Warn("stale takeover refused", "worker", req.Worker, "token", req.Token)
		writeError(w, http.StatusConflict, codeStaleToken, err.Error())
		return
	}
	resp := takeoverResponse{Pending: []int{}}
	for k := 1; k < len(s.done); k++ {
		if !s.done[k] {
			resp.Pending = append(resp.Pending, k)
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

func (s *store) handlePost(w http.ResponseWriter, r *http.Request) {
	var res result
	if !decode(w, r, &res) {
		return
	}
	if res.Task < 1 || res.Task >= len(s.done) {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("no task %d: tasks are 1..%d", res.Task, len(s.done)-1))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admit(res.Token, res.Worker); err != nil {
		s.rejected = append(s.rejected, res)
		s.log.Warn("stale result refused", "task", res.Task, "worker", res.Worker, "token", res.Token,
			"highest", s.fence.Highest(s.election))
		writeError(w, http.StatusConflict, codeStaleToken, err.Error())
		return
	}
	if s.done[res.Task] {
		s.duplicates++
		s.log.Warn("duplicate result ignored", "task", res.Task, "worker", res.Worker, "token", res.Token)
		writeJSON(w, http.StatusOK, postResponse{Task: res.Task, Outcome: outcomeDuplicate})
		return
	}
	s.done[res.Task] = true
	s.accepted = append(s.accepted, res)
	if len(s.accepted) == len(s.done)-1 {
		s.log.Info("all tasks done", "tasks", len(s.accepted))
	}
	writeJSON(w, http.StatusOK, postResponse{Task: res.Task, Outcome: outcomeAccepted})
}

func (s *store) handleStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	st := status{
		Tasks:         len(s.done) - 1,
		Done:          len(s.accepted),
		Duplicates:    s.duplicates,
		StaleRejected: len(s.rejected),
		Token:         s.fence.Highest(s.election),
		Coordinator:   s.coordinator,
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

func (s *store) handleResults(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	resp := resultsResponse{
		Accepted: append([]result{}, s.accepted...),
		Rejected: append([]result{}, s.rejected...),
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// decode reads a JSON body into v, answering 400 (and returning false) if
// it is malformed, too large or has unknown fields.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body over 64 KiB")
			return false
		}
		writeError(w, http.StatusBadRequest, "bad_request", "bad JSON body: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	writeJSON(w, code, apiError{Message: msg, Code: errCode})
}
