package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Validity of what Init generates.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 2 * 365 * 24 * time.Hour
)

// The files Init writes, beside one pair per node (ID.pem, ID-key.pem).
const (
	CAFile        = "ca.pem"
	CAKeyFile     = "ca-key.pem"
	ClientFile    = "client.pem"
	ClientKeyFile = "client-key.pem"
)

// NodeFiles returns the certificate and key file names of node id.
func NodeFiles(id string) (cert, key string) { return id + ".pem", id + "-key.pem" }

// Init generates, in dir, a development CA (CAFile, CAKeyFile), a
// certificate and key for each node id, and one client certificate
// (ClientFile, ClientKeyFile). Keys are ECDSA P-256 and written with mode
// 0600; dir is created (0700) if missing. A node's certificate serves as
// both a TLS server and a TLS client certificate: its Common Name is the
// node id (what the peer port checks a node's announced id against), and
// its subject alternative names are hosts (IP addresses and DNS names), as
// a client checks the address it dialed. The client certificate's Common
// Name is "client". Init refuses to overwrite: if any of the files exists,
// it writes nothing. It returns the paths it wrote.
func Init(dir string, ids, hosts []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, errors.New("no node to make a certificate for")
	}
	var names []string
	names = append(names, CAFile, CAKeyFile)
	for _, id := range ids {
		if id == "" || filepath.Base(id) != id {
			return nil, fmt.Errorf("node id %q cannot name a file", id)
		}
		c, k := NodeFiles(id)
		names = append(names, c, k)
	}
	names = append(names, ClientFile, ClientKeyFile)
	var exist []string
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			exist = append(exist, filepath.Join(dir, n))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	switch len(exist) {
	case 0:
	case 1:
		return nil, fmt.Errorf("refusing to overwrite %s", exist[0])
	default:
		return nil, fmt.Errorf("refusing to overwrite %s and %d more files", exist[0], len(exist)-1)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}

	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "lockd development CA", Organization: []string{"lockd"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	var written []string
	write := func(certName, keyName string, der []byte, key *ecdsa.PrivateKey) error {
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			name, typ string
			der       []byte
			perm      os.FileMode
		}{{certName, "CERTIFICATE", der, 0o644}, {keyName, "PRIVATE KEY", kder, 0o600}} {
			p, err := writePEM(dir, f.name, f.typ, f.der, f.perm)
			if err != nil {
				return err
			}
			written = append(written, p)
		}
		return nil
	}
	if err := write(CAFile, CAKeyFile, caDER, caKey); err != nil {
		return written, err
	}
	var ips []net.IP
	var dns []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else if h != "" {
			dns = append(dns, h)
		}
	}
	leaf := func(cn string, usage []x509.ExtKeyUsage, withHosts bool) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		t := &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn, Organization: []string{"lockd"}},
			NotBefore:   now.Add(-time.Hour),
			NotAfter:    now.Add(leafValidity),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: usage,
		}
		if withHosts {
			t.IPAddresses, t.DNSNames = ips, dns
		}
		der, err := sign(t, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	for _, id := range ids {
		der, key, err := leaf(id, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, true)
		if err != nil {
			return written, err
		}
		c, k := NodeFiles(id)
		if err := write(c, k, der, key); err != nil {
			return written, err
		}
	}
	der, key, err := leaf("client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, false)
	if err != nil {
		return written, err
	}
	return written, write(ClientFile, ClientKeyFile, der, key)
}

// sign makes a certificate from tmpl, with a random serial number, signed
// by parent's key.
func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, parentKey *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
}

// writePEM writes one PEM block to dir/name with mode perm, failing if the
// file exists.
func writePEM(dir, name, typ string, der []byte, perm os.FileMode) (string, error) {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", err
	}
	if err := pem.Encode(f, &pem.Block{Type: typ, Bytes: der}); err != nil {
		_ = f.Close()
		return "", err
	}
	return p, f.Close()
}
