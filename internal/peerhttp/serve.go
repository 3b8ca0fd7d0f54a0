package peerhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
)

// Serve answers the requests that arrive on l's connections with h, as
// net/http's server would: each request runs in its own goroutine, with a
// context that ends when the forwarding node cancels it or the connection
// fails. It returns when l fails or is closed.
func Serve(l net.Listener, h http.Handler, log *slog.Logger) error {
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go serveConn(c, h, log)
	}
}

func serveConn(raw net.Conn, h http.Handler, log *slog.Logger) {
	k := newConn(raw)
	ctx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	var mu sync.Mutex
	cancels := make(map[uint64]context.CancelFunc)
	r := bufio.NewReaderSize(raw, 64<<10)
	for {
		f, err := readFrame(r)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && !isEOF(err) {
				log.Warn("forwarding connection dropped", "peer", raw.RemoteAddr(), "err", err)
			}
			k.fail(err)
			return
		}
		switch f.kind {
		case kindCancel:
			mu.Lock()
			if cancel := cancels[f.id]; cancel != nil {
				cancel()
			}
			mu.Unlock()
		case kindRequest:
			rctx, cancel := context.WithCancel(ctx)
			mu.Lock()
			cancels[f.id] = cancel
			mu.Unlock()
			go func() {
				resp := handle(rctx, raw, h, f, log)
				cancel()
				mu.Lock()
				delete(cancels, f.id)
				mu.Unlock()
				k.send(resp.encode())
			}()
		default:
			log.Warn("forwarding connection dropped", "peer", raw.RemoteAddr(), "err", "an answer arrived at the answering end")
			k.fail(errFrame)
			return
		}
	}
}

// handle runs one request through h and returns the answer frame.
func handle(ctx context.Context, raw net.Conn, h http.Handler, f frame, log *slog.Logger) (out frame) {
	out = frame{kind: kindResponse, id: f.id}
	u, err := url.ParseRequestURI(f.uri)
	if err != nil {
		out.status, out.body = http.StatusBadRequest, []byte(`{"error":"forwarded request has a malformed URI","code":"bad_request"}`)
		return out
	}
	req := &http.Request{
		Method:        f.method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        f.header,
		Body:          http.NoBody,
		ContentLength: int64(len(f.body)),
		RemoteAddr:    raw.RemoteAddr().String(),
		RequestURI:    f.uri,
	}
	if len(f.body) > 0 {
		req.Body = readCloser{bytes.NewReader(f.body)}
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	w := &recorder{header: http.Header{}}
	defer func() {
		if p := recover(); p != nil {
			log.Error("forwarded request panicked", "method", f.method, "uri", f.uri, "panic", p)
			out.status, out.header = http.StatusInternalServerError, nil
			out.body = []byte(`{"error":"internal error","code":"internal"}`)
		}
	}()
	h.ServeHTTP(w, req.WithContext(context.WithValue(ctx, fromPeerKey{}, true)))
	if w.status == 0 {
		w.status = http.StatusOK
	}
	out.status, out.header, out.body = w.status, w.header, w.body.Bytes()
	return out
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// recorder is the ResponseWriter of a forwarded request: the answer is
// sent whole once the handler returns.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

// isEOF reports whether err is the other end closing the connection.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

type fromPeerKey struct{}

// FromPeer reports whether the request with context ctx came in over the
// peer port (a follower's forwarding), not from a client directly: the
// node that received it from the client has applied its per-client rules.
func FromPeer(ctx context.Context) bool {
	v, _ := ctx.Value(fromPeerKey{}).(bool)
	return v
}
