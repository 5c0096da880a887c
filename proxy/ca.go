package proxy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The files a CA keeps in its directory.
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca-key.pem"
)

// Lifetimes: a CA lives caLife, a host's certificate leafLife (and never
// past its CA); a certificate is made again once it has less than
// leafRenew left. At most leafCacheMax are kept.
const (
	caLife       = 5 * 365 * 24 * time.Hour
	leafLife     = 7 * 24 * time.Hour
	leafRenew    = 24 * time.Hour
	leafCacheMax = 4096
)

// CA is the local certificate authority an intercepting proxy signs its
// hosts' certificates with. Its key never leaves the directory it was made
// in; only its certificate is given to clients to trust.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	leafKey *ecdsa.PrivateKey // one key for every host's certificate

	mu    sync.Mutex
	leafs map[string]*tls.Certificate
}

// ErrCAExists is returned by NewCA when the directory already has a CA.
var ErrCAExists = errors.New("proxy: a CA exists there already")

// NewCA makes a new CA and writes it to dir (made, mode 0700, when
// missing): its certificate to dir/ca.pem and its private key, readable
// by its owner only, to dir/ca-key.pem. It refuses (ErrCAExists) to
// overwrite a CA: clients may trust it.
func NewCA(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrCAExists, p)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject: pkix.Name{
			CommonName:   "polite proxy CA",
			Organization: []string{"polite proxy (local, made on " + host + " " + now.UTC().Format("2006-01-02") + ")"},
		},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLife),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// The key first, and exclusively: a crash between leaves no
	// certificate whose key is lost.
	if err := writeNew(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	return LoadCA(dir)
}

// writeNew writes b to a file that must not exist yet.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s", ErrCAExists, path)
		}
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// LoadCA reads the CA NewCA wrote to dir.
func LoadCA(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("proxy: reading the CA: %w (make one with `polite proxy ca init`)", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("proxy: reading the CA's key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("proxy: %s and %s: %w", certPath, keyPath, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("proxy: %s: %w", certPath, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("proxy: %s is not a CA certificate", certPath)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("proxy: the CA in %s expired on %s: make a new one", certPath, cert.NotAfter.Format(time.DateOnly))
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("proxy: %s: the key cannot sign", keyPath)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, certPEM: certPEM, key: key, leafKey: leafKey, leafs: map[string]*tls.Certificate{}}, nil
}

// CertPEM is the CA's certificate, PEM-encoded: what clients are told to
// trust.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// Certificate is the CA's certificate.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// leaf returns a certificate for host (a name or an address) signed by
// the CA, made on first use and kept.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	now := time.Now()
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leafs[host]; ok && c.Leaf.NotAfter.Sub(now) > leafRenew {
		return c, nil
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, ca.leafKey.Public(), ca.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey, Leaf: leaf}
	if len(ca.leafs) >= leafCacheMax {
		clear(ca.leafs)
	}
	ca.leafs[host] = c
	return c, nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
