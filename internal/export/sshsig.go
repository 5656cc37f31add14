package export

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Signatures use OpenSSH's SSHSIG format (PROTOCOL.sshsig), which is what
// git writes for gpg.format=ssh and checks with ssh-keygen -Y verify, so
// stock `git verify-commit` accepts an export given an allowed-signers file.
// Signing in-process instead of running ssh-keygen per commit keeps a
// 10 000-record export to a handful of processes; Ed25519 is deterministic,
// so the same record still gives the same commit.

const (
	sigMagic     = "SSHSIG"
	sigNamespace = "git"
	sigHash      = "sha512"
	armorBegin   = "-----BEGIN SSH SIGNATURE-----"
	armorEnd     = "-----END SSH SIGNATURE-----"
)

func sshString(b *bytes.Buffer, s []byte) {
	var n [4]byte
	n[0], n[1], n[2], n[3] = byte(len(s)>>24), byte(len(s)>>16), byte(len(s)>>8), byte(len(s))
	b.Write(n[:])
	b.Write(s)
}

// signedData is what the key signs: the magic, namespace, reserved field,
// hash algorithm and the message's hash.
func signedData(namespace, hashAlg string, digest []byte) []byte {
	var b bytes.Buffer
	b.WriteString(sigMagic)
	sshString(&b, []byte(namespace))
	sshString(&b, nil)
	sshString(&b, []byte(hashAlg))
	sshString(&b, digest)
	return b.Bytes()
}

// sshSign returns the armored SSHSIG signature of msg in git's namespace.
func sshSign(key ed25519.PrivateKey, msg []byte) (string, error) {
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		return "", fmt.Errorf("forge public key: %w", err)
	}
	digest := sha512.Sum512(msg)
	sig := ed25519.Sign(key, signedData(sigNamespace, sigHash, digest[:]))
	var b bytes.Buffer
	b.WriteString(sigMagic)
	b.Write([]byte{0, 0, 0, 1})
	sshString(&b, pub.Marshal())
	sshString(&b, []byte(sigNamespace))
	sshString(&b, nil)
	sshString(&b, []byte(sigHash))
	sshString(&b, ssh.Marshal(ssh.Signature{Format: ssh.KeyAlgoED25519, Blob: sig}))
	enc := base64.StdEncoding.EncodeToString(b.Bytes())
	var out strings.Builder
	out.WriteString(armorBegin + "\n")
	for len(enc) > 70 { // ssh-keygen's line width
		out.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	out.WriteString(enc + "\n" + armorEnd + "\n")
	return out.String(), nil
}

// errBadSignature is every way a signature can fail to prove the forge
// signed a message.
var errBadSignature = errors.New("bad signature")

// sshVerify checks that armored is pub's SSHSIG signature of msg in git's
// namespace.
func sshVerify(pub ed25519.PublicKey, msg []byte, armored string) error {
	body := strings.TrimSpace(armored)
	if !strings.HasPrefix(body, armorBegin) || !strings.HasSuffix(body, armorEnd) {
		return fmt.Errorf("%w: not an SSH signature", errBadSignature)
	}
	body = strings.Join(strings.Fields(body[len(armorBegin):len(body)-len(armorEnd)]), "")
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return fmt.Errorf("%w: %v", errBadSignature, err)
	}
	if !bytes.HasPrefix(raw, []byte(sigMagic)) {
		return fmt.Errorf("%w: no SSHSIG magic", errBadSignature)
	}
	var f struct {
		Version   uint32
		PublicKey []byte
		Namespace string
		Reserved  []byte
		HashAlg   string
		Signature []byte
	}
	if err := ssh.Unmarshal(raw[len(sigMagic):], &f); err != nil {
		return fmt.Errorf("%w: %v", errBadSignature, err)
	}
	if f.Version != 1 || f.Namespace != sigNamespace {
		return fmt.Errorf("%w: version %d namespace %q", errBadSignature, f.Version, f.Namespace)
	}
	want, err := ssh.NewPublicKey(pub)
	if err != nil {
		return fmt.Errorf("forge public key: %w", err)
	}
	if !bytes.Equal(f.PublicKey, want.Marshal()) {
		return fmt.Errorf("%w: signed by another key", errBadSignature)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(f.Signature, &sig); err != nil || sig.Format != ssh.KeyAlgoED25519 {
		return fmt.Errorf("%w: not an ed25519 signature", errBadSignature)
	}
	var h hash.Hash
	switch f.HashAlg {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return fmt.Errorf("%w: hash %q", errBadSignature, f.HashAlg)
	}
	h.Write(msg)
	if !ed25519.Verify(pub, signedData(f.Namespace, f.HashAlg, h.Sum(nil)), sig.Blob) {
		return fmt.Errorf("%w: does not match the content", errBadSignature)
	}
	return nil
}

// AllowedSigners is the line of an ssh allowed-signers file
// (gpg.ssh.allowedSignersFile) that lets git verify-commit accept exports
// signed by pub.
func AllowedSigners(pub ed25519.PublicKey) (string, error) {
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("forge public key: %w", err)
	}
	return committerEmail + ` namespaces="git" ` + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))), nil
}

// ParseAllowedSigners reads the ed25519 keys of an ssh allowed-signers
// file (lines `PRINCIPALS [OPTIONS] ssh-ed25519 BASE64 [COMMENT]`, as
// AllowedSigners writes them); other key types are skipped, and a file
// with no ed25519 key is an error.
func ParseAllowedSigners(data []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != ssh.KeyAlgoED25519 {
				continue
			}
			k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(f[i] + " " + f[i+1]))
			if err != nil {
				return nil, fmt.Errorf("allowed signers line %d: %w", n+1, err)
			}
			ck, ok := k.(ssh.CryptoPublicKey)
			if !ok {
				return nil, fmt.Errorf("allowed signers line %d: not an ed25519 key", n+1)
			}
			pub, ok := ck.CryptoPublicKey().(ed25519.PublicKey)
			if !ok {
				return nil, fmt.Errorf("allowed signers line %d: not an ed25519 key", n+1)
			}
			keys = append(keys, pub)
			break
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no ssh-ed25519 key in the allowed signers")
	}
	return keys, nil
}
