package proxylive

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// upstreamCerts are the files of nginx's self-made TLS identity: a CA
// no one else trusts and a server certificate it signed for localhost and
// 127.0.0.1.
type upstreamCerts struct {
	CA, Cert, Key string // PEM files
}

// makeUpstreamCerts writes a fresh CA and server certificate into dir.
func makeUpstreamCerts(dir string) (upstreamCerts, error) {
	c := upstreamCerts{
		CA:   filepath.Join(dir, "upstream-ca.pem"),
		Cert: filepath.Join(dir, "upstream-cert.pem"),
		Key:  filepath.Join(dir, "upstream-key.pem"),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return c, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "proxylive upstream CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(48 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(48 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return c, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return c, err
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{c.CA, "CERTIFICATE", caDER}, {c.Cert, "CERTIFICATE", leafDER}, {c.Key, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return c, err
		}
	}
	return c, nil
}
