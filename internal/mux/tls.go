package mux

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"time"
)

// DefaultHandshakeTimeout bounds a dial's TLS handshake and header when
// the dial itself has no timeout.
const DefaultHandshakeTimeout = 10 * time.Second

// tlsWarnInterval is the least time between two warnings of refused TLS
// handshakes; the ones in between are counted into the next.
const tlsWarnInterval = 10 * time.Second

// WithTLS makes every connection of the Mux mutual TLS, begun before the
// protocol byte: an accepted connection first completes a TLS handshake in
// which the dialer presents a certificate that verifies against
// cfg.ClientCAs (required), and only then sends its header inside TLS; a
// dial verifies the acceptor's certificate against cfg.RootCAs and the
// dialed host (an IP address or DNS name of the certificate), presenting
// cfg's certificate in turn. The node ID an accepted connection announces
// in its header must be its certificate's Common Name or one of its DNS
// names; otherwise the connection is closed. The handshake runs under the
// header timeout when accepting, and under the dial's timeout (or
// DefaultHandshakeTimeout) when dialing. TLS 1.3 is the least version
// spoken whatever cfg says, and client certificates are required and
// verified whatever cfg.ClientAuth says. Fault rules apply to the bytes
// inside TLS, as they apply to a plain connection's.
func WithTLS(cfg *tls.Config) Option {
	return func(m *Mux) {
		c := cfg.Clone()
		c.MinVersion = max(c.MinVersion, tls.VersionTLS13)
		c.ClientAuth = tls.RequireAndVerifyClientCert
		// Every connection is authenticated by a full handshake: no
		// session is resumed, so no ticket is worth sending.
		c.SessionTicketsDisabled = true
		m.tls = c
	}
}

// TLS reports whether the Mux speaks TLS (WithTLS).
func (m *Mux) TLS() bool { return m.tls != nil }

// serverHandshake runs the accepting side's TLS handshake on raw, whose
// deadline the caller has set.
func (m *Mux) serverHandshake(raw net.Conn) (net.Conn, error) {
	tc := tls.Server(raw, m.tls)
	if err := tc.Handshake(); err != nil {
		m.warnHandshake(raw.RemoteAddr(), err)
		return nil, fmt.Errorf("%w: %v", errHandshake, err) //nolint:errorlint // one kind of failure for callers to match; the TLS error is detail
	}
	return &tlsConn{Conn: tc, raw: raw}, nil
}

// clientHandshake runs the dialing side's TLS handshake on raw, a
// connection to addr, whose deadline the caller has set.
func (m *Mux) clientHandshake(raw net.Conn, addr string) (*tlsConn, error) {
	cfg := m.tls.Clone()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	cfg.ServerName = host
	tc := tls.Client(raw, cfg)
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("%w: %v", errHandshake, err) //nolint:errorlint // one kind of failure for callers to match; the TLS error is detail
	}
	return &tlsConn{Conn: tc, raw: raw}, nil
}

// checkPeerName returns an error unless the certificate c was
// authenticated with names id (see certNames). Without TLS it returns nil.
func checkPeerName(c net.Conn, id string) error {
	tc, ok := c.(*tlsConn)
	if !ok {
		return nil
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 || !certNames(certs[0], id) {
		return fmt.Errorf("%w: the certificate does not name node %q", errPeerName, id)
	}
	return nil
}

// certNames reports whether cert names the node id: as its Subject's
// Common Name or as one of its DNS names.
func certNames(cert *x509.Certificate, id string) bool {
	return cert.Subject.CommonName == id || slices.Contains(cert.DNSNames, id)
}

// VerifyPeer dials addr and checks, in a TLS handshake, that the node
// listening there holds a certificate of the CA this Mux trusts, valid for
// the dialed host and naming the node id (as an accepting Mux checks a
// dialer). It sends no protocol byte: the other side sees a connection
// that ends after its handshake. Dials obey the fault rules as a Layer's
// do. Without TLS there is nothing to check, and it returns nil at once.
func (m *Mux) VerifyPeer(addr, id string, timeout time.Duration) error {
	if m.tls == nil {
		return nil
	}
	c, peer, err := m.dial(addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := checkPeerName(c, id); err != nil {
		return dialError(addr, peer, err)
	}
	return nil
}

// tlsConn is a TLS connection whose Close closes the socket at once, as a
// plain connection's does, instead of first sending a close_notify alert
// that can wait up to 5 s for a peer that does not read.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

func (c *tlsConn) Close() error { return c.raw.Close() }

// warnHandshake logs a refused handshake at warning level, at most once per
// tlsWarnInterval with the number left out since the last, and every one at
// debug level.
func (m *Mux) warnHandshake(from net.Addr, err error) {
	m.logger.Debug("TLS handshake refused", "remote_addr", from, "err", err)
	if ok, held := m.tlsWarn.Allow(); ok {
		m.logger.Warn("TLS handshake on the peer port refused", "remote_addr", from, "err", err,
			"refused_since_last_warning", held)
	}
}
