package certs

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestInitWritesAVerifiableBundle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	written, err := Init(dir, []string{"n1", "n2"}, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ca.pem", "ca-key.pem", "n1.pem", "n1-key.pem", "n2.pem", "n2-key.pem", "client.pem", "client-key.pem"}
	if len(written) != len(want) {
		t.Fatalf("wrote %v, want %v", written, want)
	}
	for i, w := range want {
		if filepath.Base(written[i]) != w {
			t.Fatalf("wrote %v, want %v", written, want)
		}
		st, err := os.Stat(written[i])
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(w, "-key.pem") && st.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", w, st.Mode().Perm())
		}
	}
	ca := readCert(t, filepath.Join(dir, CAFile))
	if !ca.IsCA || ca.PublicKeyAlgorithm != x509.ECDSA {
		t.Fatalf("CA: IsCA %v, key %v", ca.IsCA, ca.PublicKeyAlgorithm)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	n1 := readCert(t, filepath.Join(dir, "n1.pem"))
	if n1.Subject.CommonName != "n1" {
		t.Fatalf("n1's CN is %q", n1.Subject.CommonName)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		for _, host := range []string{"127.0.0.1", "localhost"} {
			if _, err := n1.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Fatalf("n1 as %v for %s: %v", usage, host, err)
			}
		}
	}
	if _, err := n1.Verify(x509.VerifyOptions{Roots: roots, DNSName: "10.9.9.9"}); err == nil {
		t.Fatal("n1 verified for a host it was not made for")
	}
	cl := readCert(t, filepath.Join(dir, ClientFile))
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client cert: %v", err)
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Fatal("the client certificate verified as a server's")
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "n2-key.pem"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(dir, []string{"n1", "n2"}, []string{"127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "n2-key.pem") {
		t.Fatalf("Init over an existing key: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("Init wrote files although it refused: %v", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "n2-key.pem")); string(b) != "mine" {
		t.Fatal("the existing file changed")
	}
	if _, err := Init(t.TempDir(), []string{"../x"}, nil); err == nil {
		t.Fatal("a node id with a path in it was accepted")
	}
}

// handshake runs a TLS handshake between a client and a server config over
// a loopback connection and returns the client's and the server's errors.
func handshake(t *testing.T, client, server *tls.Config) (error, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, server)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		err = tc.Handshake()
		if err == nil {
			_, err = tc.Read(make([]byte, 1)) // TLS 1.3: a refused client cert shows here
		}
		if err == nil {
			_, err = tc.Write([]byte{2})
		}
		srvErr <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	tc := tls.Client(c, client)
	cerr := tc.Handshake()
	if cerr == nil {
		_, cerr = tc.Write([]byte{1})
		if cerr == nil {
			_, cerr = tc.Read(make([]byte, 1))
		}
	}
	return cerr, <-srvErr
}

func TestPeerTLSIsMutualAndCAbound(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	for _, d := range []string{dir, other} {
		if _, err := Init(d, []string{"n1", "n2"}, []string{"127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	peer := func(d, id string) *tls.Config {
		c, k := NodeFiles(id)
		cfg, err := PeerTLS(filepath.Join(d, CAFile), filepath.Join(d, c), filepath.Join(d, k))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	n1, n2, foreign := peer(dir, "n1"), peer(dir, "n2"), peer(other, "n2")
	if n1.MinVersion != tls.VersionTLS13 || n1.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("peer config: min version %x, client auth %v", n1.MinVersion, n1.ClientAuth)
	}
	client := n1.Clone()
	client.ServerName = "127.0.0.1"
	if cerr, serr := handshake(t, client, n2); cerr != nil || serr != nil {
		t.Fatalf("same CA: client %v, server %v", cerr, serr)
	}
	if _, serr := handshake(t, withName(foreign), n1); serr == nil {
		t.Fatal("a certificate of another CA was accepted as a client's")
	}
	if cerr, _ := handshake(t, client, foreign); cerr == nil {
		t.Fatal("a server certificate of another CA was accepted")
	}
	noCert := &tls.Config{RootCAs: n1.RootCAs, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
	if _, serr := handshake(t, noCert, n1); serr == nil {
		t.Fatal("a client without a certificate was accepted")
	}
	if _, err := PeerTLS(filepath.Join(dir, CAFile), "", ""); err == nil {
		t.Fatal("PeerTLS without a certificate")
	}
}

func withName(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.ServerName = "127.0.0.1"
	return c
}

// TestWriteClientBundle: the PKCS#12 bundle holds the client certificate,
// its key and the CA, and opens with the password written beside it.
func TestWriteClientBundle(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir, []string{"n1"}, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	written, err := WriteClientBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 2 {
		t.Fatalf("wrote %v", written)
	}
	der, err := os.ReadFile(filepath.Join(dir, ClientBundleFile))
	if err != nil {
		t.Fatal(err)
	}
	pw, err := os.ReadFile(filepath.Join(dir, ClientBundlePasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	key, cert, cas, err := pkcs12.DecodeChain(der, strings.TrimSpace(string(pw)))
	if err != nil {
		t.Fatalf("decode the bundle with its password: %v", err)
	}
	if _, _, _, err := pkcs12.DecodeChain(der, "wrong"); err == nil {
		t.Error("the bundle opened with a wrong password")
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, ClientFile), filepath.Join(dir, ClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cert.Raw, pair.Certificate[0]) || cert.Subject.CommonName != "client" {
		t.Errorf("the bundle's certificate is not the client certificate: %v", cert.Subject)
	}
	if pub, ok := key.(interface{ Public() crypto.PublicKey }); !ok || !cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }).Equal(pub.Public()) {
		t.Error("the bundle's key does not match its certificate")
	}
	if len(cas) != 1 || !cas[0].IsCA {
		t.Errorf("the bundle's chain: %d certificates, want the CA", len(cas))
	}
	for _, p := range written {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", p, st.Mode().Perm(), err)
		}
	}
	if _, err := WriteClientBundle(dir); err == nil {
		t.Error("a second bundle overwrote the first")
	}
}
