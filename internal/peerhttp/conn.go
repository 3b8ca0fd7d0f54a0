package peerhttp

import (
	"bufio"
	"net"
	"sync"
)

// conn is one forwarding connection, either end. Frames are written by one
// goroutine, which writes every frame queued while it was busy before it
// flushes: under load many requests or answers leave in one write.
type conn struct {
	c    net.Conn
	out  chan []byte
	done chan struct{} // closed by fail
	once sync.Once
	err  error // why the connection ended; set before done is closed
}

func newConn(c net.Conn) *conn {
	k := &conn{c: c, out: make(chan []byte, 256), done: make(chan struct{})}
	go k.writeLoop()
	return k
}

// send queues an encoded frame. It reports false if the connection has
// ended, in which case the frame was not queued and will never be sent.
func (k *conn) send(b []byte) bool {
	select {
	case <-k.done:
		return false
	default:
	}
	select {
	case k.out <- b:
		return true
	case <-k.done:
		return false
	}
}

func (k *conn) writeLoop() {
	w := bufio.NewWriterSize(k.c, 64<<10)
	for {
		var b []byte
		select {
		case b = <-k.out:
		case <-k.done:
			return
		}
		for {
			if _, err := w.Write(b); err != nil {
				k.fail(err)
				return
			}
			select {
			case b = <-k.out:
				continue
			default:
			}
			break
		}
		if err := w.Flush(); err != nil {
			k.fail(err)
			return
		}
	}
}

// fail ends the connection with err; the first call's err is kept.
func (k *conn) fail(err error) {
	k.once.Do(func() {
		k.err = err
		close(k.done)
		_ = k.c.Close()
	})
}
