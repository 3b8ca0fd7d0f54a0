package certs

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// The files WriteClientBundle writes.
const (
	ClientBundleFile         = "client.p12"
	ClientBundlePasswordFile = "client.p12.password"
)

// WriteClientBundle writes, in dir, the client certificate and key that
// Init wrote (ClientFile, ClientKeyFile) with the CA's certificate as one
// PKCS#12 file (ClientBundleFile), which browsers import: an operator
// opens the status page of a cluster that requires client certificates
// with it. The bundle is encrypted (AES-256, PBKDF2) with a random
// password, written beside it (ClientBundlePasswordFile, mode 0600). Both
// files are refused if they exist. It returns the paths it wrote.
func WriteClientBundle(dir string) ([]string, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, ClientFile), filepath.Join(dir, ClientKeyFile))
	if err != nil {
		return nil, fmt.Errorf("read the client certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("read %s: no PEM certificate", CAFile)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", CAFile, err)
	}
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	der, err := pkcs12.Modern.Encode(pair.PrivateKey, cert, []*x509.Certificate{ca}, password)
	if err != nil {
		return nil, fmt.Errorf("encode the client bundle: %w", err)
	}
	var written []string
	for _, f := range []struct {
		name string
		data []byte
	}{{ClientBundlePasswordFile, []byte(password + "\n")}, {ClientBundleFile, der}} {
		p := filepath.Join(dir, f.name)
		h, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return written, err
		}
		_, err = h.Write(f.data)
		if cerr := h.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}
