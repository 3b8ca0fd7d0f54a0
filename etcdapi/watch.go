package etcdapi

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockd/lockd/acl"
	"github.com/lockd/lockd/fsm"
)

// Watches are served by the node the stream reached, from its own state:
// every node applies the same committed entries and keeps the same
// history (docs/design.md, "History and compaction"), so a follower's
// events are the leader's, only possibly later. No leader is needed, as
// in etcd.

// Bounds of a watch.
const (
	// watchPage is the most events read from the history at a time;
	// one entry's events are never split.
	watchPage = 1000
	// progressEvery is how often a watch created with progress_notify
	// that saw no event is told how far it has got, as etcd does.
	progressEvery = 10 * time.Minute
)

// watchServer is etcd's Watch service.
type watchServer struct{ s *Server }

// watchStream is one Watch stream: its watches, and the lock that lets
// their goroutines send one answer at a time.
type watchStream struct {
	s      *Server
	c      *call
	stream pb.Watch_WatchServer
	sendMu sync.Mutex
	wg     sync.WaitGroup

	mu      sync.Mutex
	watches map[int64]*watch
	nextID  int64
}

// watch is one watch of a stream.
type watch struct {
	id     int64
	cancel context.CancelFunc
	// after is the revision the watch has sent every event up to.
	after atomic.Uint64
}

func (w watchServer) Watch(stream pb.Watch_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	ws := &watchStream{s: w.s, c: callOf(stream.Context()), stream: stream, watches: map[int64]*watch{}}
	defer func() {
		cancel()
		ws.wg.Wait() // no goroutine sends once the handler has returned
	}()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case req.GetCreateRequest() != nil:
			if err := ws.create(ctx, req.GetCreateRequest()); err != nil {
				return err
			}
		case req.GetCancelRequest() != nil:
			if err := ws.cancelWatch(req.GetCancelRequest().WatchId); err != nil {
				return err
			}
		case req.GetProgressRequest() != nil:
			if err := ws.progress(); err != nil {
				return err
			}
		}
	}
}

func (ws *watchStream) send(r *pb.WatchResponse) error {
	ws.sendMu.Lock()
	defer ws.sendMu.Unlock()
	return ws.stream.Send(r)
}

// refuse answers a create that cannot be served: created and canceled at
// once, with the reason, as etcd answers one.
func (ws *watchStream) refuse(id int64, err error) error {
	return ws.send(&pb.WatchResponse{Header: ws.s.header(ws.s.b.FSM().AppliedIndex()), WatchId: id, Created: true, Canceled: true,
		CancelReason: status.Convert(grpcErr(err)).Message()})
}

func (ws *watchStream) create(ctx context.Context, r *pb.WatchCreateRequest) error {
	ws.mu.Lock()
	id := r.WatchId
	if id == 0 || id == -1 {
		for ws.watches[ws.nextID] != nil {
			ws.nextID++
		}
		id = ws.nextID
		ws.nextID++
	} else if ws.watches[id] != nil || id < 0 {
		ws.mu.Unlock()
		return ws.refuse(id, status.Error(codes.InvalidArgument, "etcdserver: watch_id is negative or already in use on this stream"))
	}
	ws.mu.Unlock()
	if err := keyRange(r.Key, r.RangeEnd); err != nil {
		return ws.refuse(id, err)
	}
	if err := ws.s.allowKeys(ws.c, r.Key, r.RangeEnd, acl.Read); err != nil {
		return ws.refuse(id, err)
	}
	if r.StartRevision < 0 {
		return ws.refuse(id, rpctypes.ErrGRPCFutureRev)
	}
	f := ws.s.b.FSM()
	applied := f.AppliedIndex()
	after := applied
	if r.StartRevision > 0 {
		after = uint64(r.StartRevision - 1)
	}
	w := &watch{id: id}
	w.after.Store(after)
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	ws.mu.Lock()
	ws.watches[id] = w
	ws.mu.Unlock()
	// The answer that it was created goes before any of its events.
	if err := ws.send(&pb.WatchResponse{Header: ws.s.header(applied), WatchId: id, Created: true}); err != nil {
		cancel()
		return err
	}
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		ws.run(wctx, w, r)
	}()
	return nil
}

func (ws *watchStream) cancelWatch(id int64) error {
	ws.mu.Lock()
	w := ws.watches[id]
	delete(ws.watches, id)
	ws.mu.Unlock()
	if w == nil {
		return nil
	}
	w.cancel()
	return ws.send(&pb.WatchResponse{Header: ws.s.header(w.after.Load()), WatchId: id, Canceled: true})
}

// progress answers a progress request: a header whose revision every
// watch of the stream has sent all its events up to, watch ID -1.
func (ws *watchStream) progress() error {
	rev := ws.s.b.FSM().AppliedIndex()
	ws.mu.Lock()
	for _, w := range ws.watches {
		rev = min(rev, w.after.Load())
	}
	ws.mu.Unlock()
	return ws.send(&pb.WatchResponse{Header: ws.s.header(rev), WatchId: -1})
}

// topicOf is the part of the state a watch of [key, end) waits on: the
// key, or the longest prefix every key of the range starts with.
func topicOf(key, end []byte) fsm.Topic {
	if len(end) == 0 {
		return fsm.KeyTopic(key)
	}
	if isAll(end) {
		return fsm.PrefixTopic(nil)
	}
	n := 0
	for n < len(key) && n < len(end) && key[n] == end[n] {
		n++
	}
	return fsm.PrefixTopic(key[:n])
}

// run sends a watch's events until its context ends or the history no
// longer reaches back to it (then it is canceled with the oldest
// revision a watch may start from, as etcd's compact_revision).
func (ws *watchStream) run(ctx context.Context, w *watch, r *pb.WatchCreateRequest) {
	f := ws.s.b.FSM()
	topic := topicOf(r.Key, r.RangeEnd)
	noPut, noDelete := false, false
	for _, flt := range r.Filters {
		switch flt {
		case pb.WatchCreateRequest_NOPUT:
			noPut = true
		case pb.WatchCreateRequest_NODELETE:
			noDelete = true
		}
	}
	var tick <-chan time.Time
	if r.ProgressNotify {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		tick = t.C
	}
	sent := false
	for {
		changed, stop := f.Watch(topic)
		after := w.after.Load()
		page, err := f.Events(after, r.Key, r.RangeEnd, watchPage)
		var compacted *fsm.CompactedError
		if errors.As(err, &compacted) {
			stop()
			ws.mu.Lock()
			delete(ws.watches, w.id)
			ws.mu.Unlock()
			_ = ws.send(&pb.WatchResponse{Header: ws.s.header(f.AppliedIndex()), WatchId: w.id, Canceled: true,
				CompactRevision: revision(compacted.Oldest + 1), CancelReason: "etcdserver: mvcc: required revision has been compacted"})
			return
		}
		resp := &pb.WatchResponse{Header: ws.s.header(page.Next), WatchId: w.id}
		for _, e := range page.Events {
			ev := &mvccpb.Event{Kv: keyValue(e.KV)}
			if e.Type == fsm.EventDelete {
				if noDelete {
					continue
				}
				ev.Type = mvccpb.DELETE
			} else if noPut {
				continue
			}
			if r.PrevKv && e.Prev != nil {
				ev.PrevKv = keyValue(*e.Prev)
			}
			resp.Events = append(resp.Events, ev)
		}
		w.after.Store(page.Next)
		if len(resp.Events) > 0 {
			if ws.send(resp) != nil {
				stop()
				return
			}
			sent = true
		}
		if page.More {
			stop()
			continue
		}
		select {
		case <-changed:
		case <-tick:
			if !sent {
				_ = ws.send(&pb.WatchResponse{Header: ws.s.header(w.after.Load()), WatchId: w.id})
			}
			sent = false
		case <-ctx.Done():
			stop()
			return
		}
		stop()
	}
}
