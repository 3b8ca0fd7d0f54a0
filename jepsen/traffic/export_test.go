package traffic

import (
	"context"
	"math/rand/v2"
	"net/http"

	"github.com/lockd/lockd/client"
)

// Worker is a lock worker for tests outside the package.
type Worker = worker

// NewWorker returns a worker of t using locks.
func (t *Traffic) NewWorker(locks []string) *Worker {
	return t.newWorker(t.lockToken, locks, rand.New(rand.NewPCG(1, 2)))
}

// Session is worker.session.
func (w *worker) Session(ctx context.Context) *client.Session { return w.session(ctx) }

// EndSession is worker.endSession.
func (w *worker) EndSession() { w.endSession() }

// AbandonOne is Traffic.abandonOne through a plain HTTP client.
func (t *Traffic) AbandonOne(ctx context.Context, endpoint string) {
	t.abandonOne(ctx, http.DefaultClient, t.nextClient(), endpoint, rand.New(rand.NewPCG(1, 2)))
}

// WatchHold is worker.watchHold.
func (w *worker) WatchHold(ctx context.Context, lock string, token uint64, lost <-chan struct{}, s *client.Session) {
	w.watchHold(ctx, lock, token, lost, s)
}

// GiveUp is worker.giveUp.
func (w *worker) GiveUp(lock string, at int64) { w.giveUp(lock, at) }
