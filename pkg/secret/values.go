package secret

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

const (
	tagNull = "!!null"
	tagStr  = "!!str"
)

// EncryptValues encrypts every leaf scalar of a YAML values file in the given format (v2 for
// ""), keeping keys, order, comments and structure. Null leaves are left alone. name is used
// in errors only.
func EncryptValues(name string, data []byte, key Key, format Format) ([]byte, error) {
	return UpdateValues(name, nil, data, key, format)
}

// DecryptValues decrypts every leaf of an encrypted YAML values file. A leaf that is not an
// encrypted string (other than null or "") is an error naming the file, the YAML path and
// the line.
func DecryptValues(name string, data []byte, key Key) ([]byte, error) {
	if key.IsZero() {
		return nil, &Error{File: name, Err: ErrNoKey}
	}
	return transformValues(name, data, func(n *yaml.Node) error {
		value, tag, _, err := openLeaf(n, key)
		if err != nil || tag == "" {
			return err
		}
		setLeaf(n, value, tag)
		return nil
	})
}

// UpdateValues encrypts plain, the edited plaintext of the values file encrypted, in the given
// format (v2 for ""). A leaf whose path, plaintext and format are unchanged keeps its old
// ciphertext, so an edit changes only the lines that were edited. encrypted may be empty.
func UpdateValues(name string, encrypted, plain []byte, key Key, format Format) ([]byte, error) {
	if key.IsZero() {
		return nil, &Error{File: name, Err: ErrNoKey}
	}
	if format == "" {
		format = FormatV2
	}
	if format != FormatV2 && format != FormatWerf {
		return nil, &Error{File: name, Err: fmt.Errorf("cannot write secrets in the %q format: use v2 or werf", format)}
	}
	type oldLeaf struct {
		value, tag, ciphertext string
		style                  yaml.Style
		format                 Format
	}
	old := map[string]oldLeaf{}
	if len(bytes.TrimSpace(encrypted)) > 0 {
		docs, err := parseYAML(name, encrypted)
		if err != nil {
			return nil, err
		}
		err = walkLeaves(name, docs, func(n *yaml.Node, path string) error {
			ciphertext, style := n.Value, n.Style
			value, tag, f, err := openLeaf(n, key)
			if err != nil || tag == "" {
				return err
			}
			old[path] = oldLeaf{value: value, tag: tag, ciphertext: ciphertext, style: style, format: f}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	docs, err := parseYAML(name, plain)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return bytes.Clone(plain), nil
	}
	err = walkLeaves(name, docs, func(n *yaml.Node, path string) error {
		tag := n.ShortTag()
		if tag == tagNull {
			return nil
		}
		if o, ok := old[path]; ok && o.format == format && o.value == n.Value && (format == FormatWerf || o.tag == tag) {
			setLeaf(n, o.ciphertext, tagStr)
			n.Style = o.style
			return nil
		}
		if tag == tagStr && alreadyEncrypted(n.Value, key) {
			return fmt.Errorf("%w: this value is already encrypted (%s); decrypt the file first, or use rotate-key to change keys", ErrAlreadyEncrypted, FormatOf([]byte(n.Value)).Description())
		}
		ciphertext, err := sealLeaf(n.Value, tag, key, format)
		if err != nil {
			return err
		}
		setLeaf(n, ciphertext, tagStr)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return emitYAML(name, docs)
}

// RotateValues re-encrypts every leaf of an encrypted values file from oldKey to newKey. With
// format "" each value keeps its format (werf-gcm values become v2); otherwise all values are
// written in format.
func RotateValues(name string, data []byte, oldKey, newKey Key, format Format) ([]byte, error) {
	if oldKey.IsZero() || newKey.IsZero() {
		return nil, &Error{File: name, Err: ErrNoKey}
	}
	return transformValues(name, data, func(n *yaml.Node) error {
		value, tag, f, err := openLeaf(n, oldKey)
		if err != nil || tag == "" {
			if errors.Is(err, ErrKeyMismatch) {
				err = fmt.Errorf("old key: %w", err)
			}
			return err
		}
		target := rotatedFormat(f, format)
		ciphertext, err := sealLeaf(value, tag, newKey, target)
		if err != nil {
			return err
		}
		setLeaf(n, ciphertext, tagStr)
		return nil
	})
}

// ValuesFormat tells the format of a values file: the format all its encrypted leaves share,
// FormatPlain when no leaf is encrypted, or FormatMixed.
func ValuesFormat(name string, data []byte) (Format, error) {
	docs, err := parseYAML(name, data)
	if err != nil {
		return "", err
	}
	seen := map[Format]bool{}
	err = walkLeaves(name, docs, func(n *yaml.Node, _ string) error {
		switch n.ShortTag() {
		case tagNull:
		case tagStr:
			if n.Value != "" {
				seen[FormatOf([]byte(n.Value))] = true
			}
		default:
			seen[FormatPlain] = true
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	switch len(seen) {
	case 0:
		return FormatPlain, nil
	case 1:
		for f := range seen {
			return f, nil
		}
	}
	return FormatMixed, nil
}

// openLeaf decrypts one encrypted leaf and returns its plaintext, YAML tag and format. The
// tag is "" for leaves that are left as they are (null and empty string).
func openLeaf(n *yaml.Node, key Key) (value, tag string, f Format, err error) {
	switch t := n.ShortTag(); {
	case t == tagNull:
		return "", "", "", nil
	case t != tagStr:
		return "", "", "", fmt.Errorf("%w: found a plain %s value where an encrypted string was expected", ErrNotEncrypted, strings.TrimPrefix(t, "!!"))
	case n.Value == "":
		return "", "", "", nil
	}
	f = FormatOf([]byte(n.Value))
	if f == FormatPlain {
		return "", "", "", fmt.Errorf("%w: found a plain string (expected a werf value, hex starting with 1000, or a %s value)", ErrNotEncrypted, V2Prefix)
	}
	plain, err := DecryptValue(n.Value, key)
	if err != nil {
		return "", "", "", err
	}
	switch f {
	case FormatV2:
		value, tag, err = unframeV2(plain)
		return value, tag, f, err
	case FormatWerfGCM:
		if !utf8.Valid(plain) {
			return "", "", "", fmt.Errorf("%w (the decrypted value is not UTF-8 text)", ErrKeyMismatch)
		}
		value, tag = unframeWerfGCM(plain)
		return value, tag, f, nil
	}
	if !utf8.Valid(plain) {
		return "", "", "", fmt.Errorf("%w (the decrypted value is not UTF-8 text)", ErrKeyMismatch)
	}
	return string(plain), tagStr, f, nil
}

// sealLeaf encrypts one leaf. The werf format encrypts the scalar text only, so the tag is
// lost (werf's behaviour); v2 keeps a non-string tag inside the payload.
func sealLeaf(value, tag string, key Key, format Format) (string, error) {
	if format == FormatWerf {
		return EncryptValue([]byte(value), key, FormatWerf)
	}
	return EncryptValue(frameV2(tag, value), key, FormatV2)
}

// frameV2 is the v2 plaintext of a YAML leaf: the string itself for a string that does not
// start with NUL, otherwise "\x00" tag "\x00" value.
func frameV2(tag, value string) []byte {
	if tag == tagStr && !strings.HasPrefix(value, "\x00") {
		return []byte(value)
	}
	return []byte("\x00" + tag + "\x00" + value)
}

func unframeV2(plain []byte) (value, tag string, err error) {
	if len(plain) == 0 || plain[0] != 0 {
		return string(plain), tagStr, nil
	}
	tag, value, ok := strings.Cut(string(plain[1:]), "\x00")
	if !ok || tag == "" {
		return "", "", fmt.Errorf("%w: the decrypted v2 value has a broken type frame", ErrMalformed)
	}
	return value, tag, nil
}

var werfFrame = regexp.MustCompile(`^(![^\x00\s]*)\x00([0-9]{1,3})\x00`)

// unframeWerfGCM undoes the "tag NUL style NUL value" framing werf/common-go puts around YAML
// leaves in its GCM format; a value without that framing is a plain string.
func unframeWerfGCM(plain []byte) (value, tag string) {
	m := werfFrame.FindSubmatchIndex(plain)
	if m == nil {
		return string(plain), tagStr
	}
	return string(plain[m[1]:]), string(plain[m[2]:m[3]])
}

// rotatedFormat is the format a value of format f is written in by a rotation to format.
func rotatedFormat(f, format Format) Format {
	if format != "" {
		return format
	}
	if f == FormatWerf {
		return FormatWerf
	}
	return FormatV2
}

// alreadyEncrypted reports whether value is certainly an encrypted value: a v2 value, or a
// werf value that decrypts with key (a plaintext may look like hex by chance).
func alreadyEncrypted(value string, key Key) bool {
	switch FormatOf([]byte(value)) {
	case FormatV2:
		return true
	case FormatWerf, FormatWerfGCM:
		plain, err := DecryptValue(value, key)
		return err == nil && utf8.Valid(plain)
	}
	return false
}

// setLeaf replaces a leaf's value and tag. Quoting is kept, since it suits an encrypted value
// and tells how the plaintext was written; literal and folded styles are not, and a multi-line
// plaintext is left to the emitter, which writes it as a literal block.
func setLeaf(n *yaml.Node, value, tag string) {
	n.Value = value
	n.Tag = tag
	n.Style &= yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle
	if strings.Contains(value, "\n") {
		n.Style = 0
	}
}

// transformValues applies fn to every leaf of a values file and re-emits it.
func transformValues(name string, data []byte, fn func(n *yaml.Node) error) ([]byte, error) {
	docs, err := parseYAML(name, data)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return bytes.Clone(data), nil
	}
	if err := walkLeaves(name, docs, func(n *yaml.Node, _ string) error { return fn(n) }); err != nil {
		return nil, err
	}
	return emitYAML(name, docs)
}

func parseYAML(name string, data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		n := &yaml.Node{}
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, &Error{File: name, Err: fmt.Errorf("parse YAML: %w", err)}
		}
		docs = append(docs, n)
	}
}

func emitYAML(name string, docs []*yaml.Node) ([]byte, error) {
	for _, d := range docs {
		untagMergeKeys(d)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, &Error{File: name, Err: fmt.Errorf("write YAML: %w", err)}
		}
	}
	if err := enc.Close(); err != nil {
		return nil, &Error{File: name, Err: fmt.Errorf("write YAML: %w", err)}
	}
	return out.Bytes(), nil
}

// untagMergeKeys drops the implicit !!merge tag of "<<" keys, which yaml.v3 would otherwise
// write out as "!!merge <<".
func untagMergeKeys(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" && k.Style&yaml.TaggedStyle == 0 {
				k.Tag = ""
			}
		}
	}
	for _, c := range n.Content {
		untagMergeKeys(c)
	}
}

// walkLeaves calls fn for every scalar that is a value (not a mapping key) in docs. Aliases
// are skipped: the node they point to is visited where its anchor is. Errors from fn are
// wrapped in an *Error with the file, path and line.
func walkLeaves(name string, docs []*yaml.Node, fn func(n *yaml.Node, path string) error) error {
	var walk func(n *yaml.Node, path string, flow bool) error
	walk = func(n *yaml.Node, path string, flow bool) error {
		flow = flow || n.Style&yaml.FlowStyle != 0
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if err := walk(c, path, flow); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if err := walk(n.Content[i+1], path+pathKey(n.Content[i].Value), flow); err != nil {
					return err
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if err := walk(c, path+"["+strconv.Itoa(i)+"]", flow); err != nil {
					return err
				}
			}
		case yaml.ScalarNode:
			if flow {
				// In a flow collection the emitter quotes encrypted values (they hold ':'),
				// so quoting there says nothing about how the plaintext was written.
				n.Style &^= yaml.SingleQuotedStyle | yaml.DoubleQuotedStyle
			}
			if err := fn(n, pathOrRoot(path)); err != nil {
				return &Error{File: name, Path: pathOrRoot(path), Line: n.Line, Err: err}
			}
		}
		return nil
	}
	for i, d := range docs {
		prefix := ""
		if len(docs) > 1 {
			prefix = "(document " + strconv.Itoa(i+1) + ") "
		}
		if err := walk(d, prefix, false); err != nil {
			return err
		}
	}
	return nil
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)

func pathKey(k string) string {
	if plainKey.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func pathOrRoot(p string) string {
	if p == "" || strings.HasSuffix(p, " ") {
		return p + "."
	}
	return p
}
