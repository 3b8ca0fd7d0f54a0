package lease

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Layer is the connection layer the lease exchange runs on: one protocol of
// the node's peer port (internal/mux's ProtoLease layer in a real node). It
// accepts the connections leaders dial to this node and dials followers.
type Layer interface {
	Accept() (net.Conn, error)
	Close() error
	Dial(addr string, timeout time.Duration) (net.Conn, error)
}

// The lease exchange is lockd's own protocol beside Raft's. A leader asks
// every voter "do you follow me, in this term, and for how much longer do
// you promise not to vote for anyone else?"; a follower answers with the
// remaining part of its promise, measured on its own clock at the moment it
// answers. The package doc has the argument; this file has the mechanics.
//
// Frames, big-endian:
//
//	request  seq u64 | release u1 term u63 | idLen u8 | leader id (idLen bytes)
//	answer   seq u64 | remaining i64 (nanoseconds; <= 0: no promise) | applied u64
//
// A request with the release bit set is a release: the leader gave its
// master lease up for the rest of term (before a leadership transfer), so
// the follower's promise to it for term ends, and the follower answers
// releasedAnswer (-1) if it follows that leader in term, 0 otherwise. A
// node of an earlier version reads a release as a request for another
// term and answers 0.
//
// applied is the follower's last applied log index: the leader keeps it
// per peer as a measure of how far behind the peer is (the voter-set
// maintenance's "caught up", see autopilot.go). hashicorp/raft does not
// expose its per-follower match index.
//
// A connection carries one request at a time; a late answer to an earlier
// request is recognised by its seq and skipped.

type promiseRequest struct {
	seq, term uint64
	leader    string
	release   bool
}

// releaseBit marks a release in a request's term field (Raft terms stay
// far below 2^63).
const releaseBit = 1 << 63

type promiseAnswer struct {
	seq       uint64
	remaining time.Duration
	applied   uint64
}

// maxExchangeIdle closes a follower's side of an exchange connection that
// carried no request for this long (a leader that died without closing it).
const maxExchangeIdle = time.Minute

var errPeerBusy = errors.New("lease: previous exchange with this peer still waiting")

func writeRequest(w io.Writer, r promiseRequest) error {
	if len(r.leader) == 0 || len(r.leader) > 255 {
		return fmt.Errorf("lease: leader id %q must be 1..255 bytes", r.leader)
	}
	buf := make([]byte, 0, 17+len(r.leader))
	buf = binary.BigEndian.AppendUint64(buf, r.seq)
	if r.term&releaseBit != 0 {
		return fmt.Errorf("lease: term %d out of range", r.term)
	}
	term := r.term
	if r.release {
		term |= releaseBit
	}
	buf = binary.BigEndian.AppendUint64(buf, term)
	buf = append(buf, byte(len(r.leader))) //nolint:gosec // G115: checked to be 1..255 above
	buf = append(buf, r.leader...)
	_, err := w.Write(buf)
	return err
}

func readRequest(r io.Reader) (promiseRequest, error) {
	var hdr [17]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return promiseRequest{}, err
	}
	id := make([]byte, hdr[16])
	if _, err := io.ReadFull(r, id); err != nil {
		return promiseRequest{}, err
	}
	term := binary.BigEndian.Uint64(hdr[8:])
	return promiseRequest{seq: binary.BigEndian.Uint64(hdr[0:]), term: term &^ releaseBit, leader: string(id),
		release: term&releaseBit != 0}, nil
}

func writeAnswer(w io.Writer, a promiseAnswer) error {
	var buf [24]byte
	binary.BigEndian.PutUint64(buf[0:], a.seq)
	binary.BigEndian.PutUint64(buf[8:], uint64(a.remaining)) //nolint:gosec // G115: two's complement on purpose: readAnswer turns it back into the same, possibly negative, duration
	binary.BigEndian.PutUint64(buf[16:], a.applied)
	_, err := w.Write(buf[:])
	return err
}

func readAnswer(r io.Reader) (promiseAnswer, error) {
	var buf [24]byte
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return promiseAnswer{}, err
	}
	return promiseAnswer{seq: binary.BigEndian.Uint64(buf[0:]), remaining: time.Duration(binary.BigEndian.Uint64(buf[8:])), //nolint:gosec // G115: the inverse of writeAnswer's conversion; a negative remaining means no promise
		applied: binary.BigEndian.Uint64(buf[16:])}, nil
}

// promiser is what a follower consults to answer: the remaining part of its
// promise not to vote for anyone but leader while in term, or <= 0.
type promiser func(term uint64, leader string) time.Duration

// exchange runs both sides of the lease exchange for one node.
type exchange struct {
	layer    Layer
	promise  promiser
	released promiser      // answers a release; nil: 0
	applied  func() uint64 // this node's last applied index, sent with each answer; nil: 0
	seq      atomic.Uint64

	mu     sync.Mutex
	peers  map[string]*promisePeer // leader side, by peer address
	conns  map[net.Conn]struct{}   // follower side, accepted
	closed bool
	wg     sync.WaitGroup
}

func newExchange(layer Layer, p promiser) *exchange {
	return &exchange{layer: layer, promise: p, peers: make(map[string]*promisePeer), conns: make(map[net.Conn]struct{})}
}

// serve answers leaders' requests until close.
func (x *exchange) serve() {
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		for {
			c, err := x.layer.Accept()
			if err != nil {
				return
			}
			if !x.track(c) {
				c.Close()
				return
			}
			x.wg.Add(1)
			go func() {
				defer x.wg.Done()
				defer x.untrack(c)
				x.answer(c)
			}()
		}
	}()
}

func (x *exchange) track(c net.Conn) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false
	}
	x.conns[c] = struct{}{}
	return true
}

func (x *exchange) untrack(c net.Conn) {
	x.mu.Lock()
	delete(x.conns, c)
	x.mu.Unlock()
	c.Close()
}

// remoteIDer is implemented by connections that know the node at the
// other end (internal/mux's).
type remoteIDer interface{ RemoteID() string }

// answer serves one leader's connection: each request gets the promise as
// it stands when the request is read. A connection whose dialer is known
// to be another node than the one the request names gets no promise.
func (x *exchange) answer(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		c.SetReadDeadline(time.Now().Add(maxExchangeIdle))
		req, err := readRequest(r)
		if err != nil {
			return
		}
		var rem time.Duration
		if id, ok := c.(remoteIDer); !ok || id.RemoteID() == req.leader {
			switch {
			case !req.release:
				rem = x.promise(req.term, req.leader)
			case x.released != nil:
				rem = x.released(req.term, req.leader)
			}
		}
		var applied uint64
		if x.applied != nil {
			applied = x.applied()
		}
		c.SetWriteDeadline(time.Now().Add(maxExchangeIdle))
		if err := writeAnswer(c, promiseAnswer{seq: req.seq, remaining: rem, applied: applied}); err != nil {
			return
		}
	}
}

// close stops serving and closes every connection of both sides.
func (x *exchange) close() {
	x.mu.Lock()
	x.closed = true
	for c := range x.conns {
		c.Close()
	}
	peers := x.peers
	x.peers = map[string]*promisePeer{}
	x.mu.Unlock()
	_ = x.layer.Close()
	for _, p := range peers {
		p.drop()
	}
	x.wg.Wait()
}

func (x *exchange) peer(addr string) *promisePeer {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := x.peers[addr]
	if !ok {
		p = &promisePeer{addr: addr}
		x.peers[addr] = p
	}
	return p
}

// lastPromise returns when the peer at addr last answered this node with a
// promise, or the zero time if it never has. The time is time.Now's
// reading, monotonic part and all, so that its age (measured against
// another reading of time.Now, see liveness.go) is immune to steps of the
// wall clock; Unix nanoseconds would keep only the wall reading, and an
// age measured from one moves with every step.
func (x *exchange) lastPromise(addr string) time.Time {
	_, at := x.peerApplied(addr)
	return at
}

// peerApplied returns the applied index the peer at addr reported with
// its last promise, and when that was (the zero time if never; with its
// monotonic reading, as lastPromise's).
func (x *exchange) peerApplied(addr string) (uint64, time.Time) {
	x.mu.Lock()
	p := x.peers[addr]
	x.mu.Unlock()
	if p == nil {
		return 0, time.Time{}
	}
	at := p.last.Load()
	if at == nil {
		return 0, time.Time{}
	}
	return p.applied.Load(), *at
}

// probe asks each of peers for its promise to leader in term, as round
// does, but waits for nothing and counts nothing: it only keeps the
// peers' last contact and applied index fresh. The leader probes the
// non-voters this way; their promises never make a quorum.
func (x *exchange) probe(peers []string, leader string, term uint64, deadline time.Time) {
	if len(peers) == 0 {
		return
	}
	req := promiseRequest{seq: x.seq.Add(1), term: term, leader: leader}
	for _, addr := range peers {
		p := x.peer(addr)
		go p.ask(x.layer, req, deadline)
	}
}

// round asks each of peers for its promise to leader in term and returns
// the promises of the first need of them to answer with one, in ascending
// order. It gives up when that many can no longer come, or at deadline
// (real time).
func (x *exchange) round(peers []string, leader string, term uint64, need int, deadline time.Time) ([]time.Duration, error) {
	if need <= 0 {
		return nil, nil
	}
	if len(peers) < need {
		return nil, fmt.Errorf("lease: %d peers cannot make the %d promises a quorum needs", len(peers), need)
	}
	req := promiseRequest{seq: x.seq.Add(1), term: term, leader: leader}
	answers := make(chan time.Duration, len(peers))
	for _, addr := range peers {
		p := x.peer(addr)
		go func() { answers <- p.ask(x.layer, req, deadline) }()
	}
	var got []time.Duration
	for left := len(peers); left > 0; left-- {
		if rem := <-answers; rem > 0 {
			got = append(got, rem)
			if len(got) == need {
				sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
				return got, nil
			}
		}
		if len(got)+left-1 < need {
			break
		}
	}
	return nil, fmt.Errorf("lease: only %d of the %d promises a quorum needs", len(got), need)
}

// release tells each of peers that leader gave its master lease up for
// the rest of term, and returns the addresses of those that answered that
// they follow leader in term and hold no promise to it any more, by
// deadline. A peer busy with an earlier question is waited for.
func (x *exchange) release(peers []string, leader string, term uint64, deadline time.Time) map[string]bool {
	req := promiseRequest{seq: x.seq.Add(1), term: term, leader: leader, release: true}
	type ack struct {
		addr string
		ok   bool
	}
	acks := make(chan ack, len(peers))
	for _, addr := range peers {
		p := x.peer(addr)
		go func() { acks <- ack{addr, p.askWaiting(x.layer, req, deadline) == releasedAnswer} }()
	}
	got := make(map[string]bool, len(peers))
	for range peers {
		if a := <-acks; a.ok {
			got[a.addr] = true
		}
	}
	return got
}

// promisePeer is the leader's side of the exchange with one follower: one
// connection, one request on it at a time.
type promisePeer struct {
	addr    string
	last    atomic.Pointer[time.Time] // when the peer last answered with a promise, as time.Now read it (monotonic reading kept); nil: never
	applied atomic.Uint64             // the applied index the peer sent with that promise
	mu      sync.Mutex
	conn    net.Conn
	r       *bufio.Reader
}

// ask sends req and waits for its answer until deadline; 0 on any failure.
// A peer still busy with an earlier request (its answer is late) is
// skipped rather than queued: a late answer is worth nothing to this round.
func (p *promisePeer) ask(layer Layer, req promiseRequest, deadline time.Time) time.Duration {
	if !p.mu.TryLock() {
		return 0
	}
	return p.askHeld(layer, req, deadline)
}

// askWaiting is ask for a request that waits for the peer's connection
// until deadline (a release) rather than skip a busy peer.
func (p *promisePeer) askWaiting(layer Layer, req promiseRequest, deadline time.Time) time.Duration {
	for !p.mu.TryLock() {
		if !time.Now().Before(deadline) {
			return 0
		}
		time.Sleep(time.Millisecond)
	}
	return p.askHeld(layer, req, deadline)
}

// askHeld is ask with p.mu held; it unlocks it.
func (p *promisePeer) askHeld(layer Layer, req promiseRequest, deadline time.Time) time.Duration {
	defer p.mu.Unlock()
	a, err := p.askLocked(layer, req, deadline)
	if err != nil {
		p.closeLocked()
		return 0
	}
	if a.remaining > 0 || a.remaining == releasedAnswer {
		p.applied.Store(a.applied)
		p.last.Store(new(time.Now()))
	}
	return a.remaining
}

func (p *promisePeer) askLocked(layer Layer, req promiseRequest, deadline time.Time) (promiseAnswer, error) {
	if p.conn == nil {
		timeout := time.Until(deadline)
		if timeout <= 0 {
			return promiseAnswer{}, errPeerBusy
		}
		c, err := layer.Dial(p.addr, timeout)
		if err != nil {
			return promiseAnswer{}, err
		}
		p.conn, p.r = c, bufio.NewReader(c)
	}
	p.conn.SetDeadline(deadline)
	if err := writeRequest(p.conn, req); err != nil {
		return promiseAnswer{}, err
	}
	for {
		a, err := readAnswer(p.r)
		if err != nil {
			return promiseAnswer{}, err
		}
		if a.seq == req.seq {
			return a, nil
		}
		// An answer to an earlier request that timed out: skip it.
	}
}

func (p *promisePeer) closeLocked() {
	if p.conn != nil {
		p.conn.Close()
		p.conn, p.r = nil, nil
	}
}

func (p *promisePeer) drop() {
	p.mu.Lock()
	p.closeLocked()
	p.mu.Unlock()
}
