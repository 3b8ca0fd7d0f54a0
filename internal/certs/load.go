// Package certs loads the TLS configurations of a lockd node and of its
// clients from PEM files, and generates a development certificate
// authority with certificates for a cluster (lockd tls init).
//
// A node uses TLS in two places, each turned on by its own flags:
//
//   - the HTTP API (ServerTLS): HTTPS with the node's certificate, and, with
//     a client CA, only for clients that present a certificate it signed;
//   - the peer port (PeerTLS): mutual TLS 1.3 between nodes, both ends
//     presenting a certificate of the cluster CA and verifying the other's
//     (internal/mux does the handshake and checks the node's name).
//
// ClientTLS is what a client (the CLI, the fault harness) and a node that
// calls another node's API use.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ServerTLS returns the configuration of the HTTPS API: the certificate in
// certFile with its key in keyFile, and, when clientCAFile is not empty,
// client certificates required and verified against the CAs in it.
func ServerTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := loadPair("--tls-cert", certFile, "--tls-key", keyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if clientCAFile != "" {
		pool, err := Pool(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// PeerTLS returns the configuration of the peer port: TLS 1.3 at least,
// this node's certificate (certFile, keyFile) presented on both sides of
// every connection, and the other side's certificate verified against the
// CAs in caFile, as a server's when dialing and as a client's, which is
// required, when accepting.
func PeerTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, errors.New("peer TLS needs all of --peer-ca, --peer-cert and --peer-key")
	}
	cert, err := loadPair("--peer-cert", certFile, "--peer-key", keyFile)
	if err != nil {
		return nil, err
	}
	pool, err := Pool(caFile)
	if err != nil {
		return nil, fmt.Errorf("--peer-ca: %w", err)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}, nil
}

// ClientTLS returns the configuration of an HTTPS client: server
// certificates verified against the CAs in caFile (the system's roots when
// empty), and the client certificate certFile with keyFile presented when
// both are given. With all three empty it returns nil: plain defaults.
func ClientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := Pool(caFile)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		cfg.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := loadPair("--cert", certFile, "--key", keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Pool returns a pool of the certificates in the PEM files.
func Pool(files ...string) (*x509.CertPool, error) {
	return appendFiles(x509.NewCertPool(), files)
}

// appendFiles adds the certificates in the PEM files to pool, skipping
// empty names.
func appendFiles(pool *x509.CertPool, files []string) (*x509.CertPool, error) {
	for _, f := range files {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", f)
		}
	}
	return pool, nil
}

// loadPair loads a certificate and its key, naming the flags in errors.
func loadPair(certFlag, certFile, keyFlag, keyFile string) (tls.Certificate, error) {
	switch {
	case certFile == "":
		return tls.Certificate{}, fmt.Errorf("%s is needed with %s", certFlag, keyFlag)
	case keyFile == "":
		return tls.Certificate{}, fmt.Errorf("%s is needed with %s", keyFlag, certFlag)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s %s, %s %s: %w", certFlag, certFile, keyFlag, keyFile, err)
	}
	return cert, nil
}

// NodeClientTLS returns the configuration a node calls other nodes' HTTPS
// APIs with: server certificates verified against the system's roots and
// the CAs in caFiles (empty names are skipped), and the certificates given
// offered when a server asks for one (Go's TLS client sends the first
// whose issuer the server says it accepts).
func NodeClientTLS(caFiles []string, certs []tls.Certificate) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if pool, err = appendFiles(pool, caFiles); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: certs}, nil
}
