package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/lockd/lockd/client"
)

// errStale is the store's answer to a token lower than one it has
// admitted: another coordinator has taken over.
var errStale = errors.New("scheduler: stale token: another coordinator has taken over")

// retryPause is how long a worker waits before it tries again after lockd
// or the store failed it.
const retryPause = time.Second

// workerConfig configures a worker.
type workerConfig struct {
	ID        string        // the worker's name, and its value in the election
	Store     string        // base URL of the result store
	Election  string        // the election to campaign in
	TTL       time.Duration // session TTL: how long a crashed coordinator still leads
	LockDelay time.Duration // how long leadership stays ungrantable after an expiry
	Work      time.Duration // how long one task takes
}

// worker campaigns for coordinator and, while it leads, works through the
// tasks the store reports pending.
type worker struct {
	cfg   workerConfig
	lockd *client.Client
	store *storeClient
	log   *slog.Logger
}

func newWorker(cfg workerConfig, lockd *client.Client, log *slog.Logger) *worker {
	return &worker{
		cfg:   cfg,
		lockd: lockd,
		store: &storeClient{base: strings.TrimRight(cfg.Store, "/"), hc: &http.Client{Timeout: 5 * time.Second}},
		log:   log,
	}
}

// Run campaigns, coordinates while it leads, and campaigns again when its
// leadership ends, until it has led and found no task pending (the job is
// done) or ctx ends. Failures of lockd or the store are logged and
// retried: a worker gives up only when told to.
func (w *worker) Run(ctx context.Context) {
	for ctx.Err() == nil {
		finished, err := w.term(ctx)
		if finished || ctx.Err() != nil {
			return
		}
		if err != nil {
			w.log.Warn("will campaign again", "after", retryPause, "err", err)
			_ = sleep(ctx, retryPause)
		}
	}
}

// term is one session of the worker's life: it campaigns, and coordinates
// while it leads. It reports whether the job is finished. The session is
// closed on return, which hands leadership on at once, without lock-delay.
func (w *worker) term(ctx context.Context) (finished bool, err error) {
	s, err := client.NewSession(ctx, w.lockd,
		client.WithTTL(w.cfg.TTL), client.WithLockDelay(w.cfg.LockDelay), client.WithName(w.cfg.ID))
	if err != nil {
		return false, err
	}
	defer s.Close()
	e := client.NewElection(s, w.cfg.Election)
	w.log.Info("campaigning", "election", w.cfg.Election)
	if err := e.Campaign(ctx, w.cfg.ID); err != nil {
		return false, err
	}
	token := e.Token()
	if token == 0 { // the session was lost as soon as it won
		return false, client.ErrSessionLost
	}
	w.log.Info("leading", "token", token)
	return w.coordinate(ctx, e, token)
}

// coordinate is the coordinator's loop. Its first act is a takeover: the
// store raises its fence to token and answers which tasks are pending.
// From then on no older coordinator can record a result, so the pending
// list cannot go stale behind its back.
//
// Leadership is checked before each task, and the coordinator stops at
// once when it is lost. The task in hand is not abandoned, though, and its
// result is posted without checking again: a check just before the post
// would narrow the window in which a paused coordinator sends a stale
// result, but never close it (the pause can fall between the check and the
// send). The store's fence closes it, and this example leaves the window
// wide open so that the fence can be seen at work.
func (w *worker) coordinate(ctx context.Context, e *client.Election, token uint64) (finished bool, err error) {
	for {
		pending, err := w.store.takeover(ctx, token, w.cfg.ID)
		if errors.Is(err, errStale) {
			w.log.Warn("superseded", "token", token)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if len(pending) == 0 {
			w.log.Info("all tasks done")
			return true, nil
		}
		w.log.Info("tasks pending", "count", len(pending))
		for _, task := range pending {
			select {
			case <-e.Lost():
				w.log.Warn("leadership lost", "token", token)
				return false, nil
			default:
			}
			outcome, err := w.do(ctx, task, token)
			switch {
			case errors.Is(err, errStale):
				w.log.Warn("result refused", "task", task, "token", token, "err", err)
				return false, nil
			case err != nil:
				return false, err
			case outcome == outcomeDuplicate:
				w.log.Warn("duplicate result", "task", task, "token", token)
			default:
				w.log.Info("result accepted", "task", task, "token", token)
			}
		}
	}
}

// do performs one task and posts its result with token.
func (w *worker) do(ctx context.Context, task int, token uint64) (outcome string, err error) {
	w.log.Info("working", "task", task, "token", token)
	if err := sleep(ctx, w.cfg.Work); err != nil {
		return "", err
	}
	// The work: one point of a parameter scan.
	r := result{Task: task, Result: fmt.Sprintf("%d^2=%d", task, task*task), Token: token, Worker: w.cfg.ID}
	return w.store.post(ctx, r)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// storeClient speaks to the result store.
type storeClient struct {
	base string
	hc   *http.Client
}

// takeover shows the store token and returns the tasks still pending, or
// errStale if a newer coordinator has shown a higher token.
func (c *storeClient) takeover(ctx context.Context, token uint64, worker string) ([]int, error) {
	var out takeoverResponse
	err := c.do(ctx, "POST", "/takeover", takeoverRequest{Token: token, Worker: worker}, &out)
	return out.Pending, err
}

// post sends a result and returns the store's outcome, or errStale.
func (c *storeClient) post(ctx context.Context, r result) (string, error) {
	var out postResponse
	err := c.do(ctx, "POST", "/results", r, &out)
	return out.Outcome, err
}

func (c *storeClient) do(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.Unmarshal(raw, &e)
		if e.Code == codeStaleToken {
			return fmt.Errorf("%w (%s)", errStale, e.Message)
		}
		return fmt.Errorf("store: %s %s: %s %s", method, path, resp.Status, e.Message)
	}
	return json.Unmarshal(raw, out)
}
