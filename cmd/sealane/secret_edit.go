package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/secret"
)

func newSecretEditCmd(sf *secretFlags, k *secretKind) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "edit FILE",
		Short: "Edit a " + k.noun + " in $EDITOR (creates FILE if it does not exist)",
		Long: `Decrypt FILE into a private temporary file, open it in $EDITOR (default vi; it may
carry arguments, split on spaces) and encrypt the result back into FILE. A FILE that does
not exist is created. If the editor fails or nothing changed, FILE is left as it was. The
temporary file is removed in every case.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSecretEdit(cmd, sf, k, args[0], format)
		},
	}
	if k == valuesKind {
		cmd.Long += `

Values whose plaintext did not change keep their ciphertext, so the diff of FILE shows
only the values that were edited.`
		cmd.Example = `  sealane secret values edit .helm/secret-values.yaml
  EDITOR="code --wait" sealane secret values edit secret-values-production.yaml`
	} else {
		cmd.Example = `  sealane secret file edit .helm/secret/tls.key
  EDITOR="code --wait" sealane secret file edit .helm/secret/db.conf`
	}
	cmd.Flags().StringVar(&format, "format", "", "format to write in: v2 or werf (default: the file's current format; v2 for a new file)")
	return cmd
}

func runSecretEdit(cmd *cobra.Command, sf *secretFlags, k *secretKind, path, formatFlag string) error {
	key, err := sf.loadKey()
	if err != nil {
		return err
	}
	e, err := openSecretEdit(k, key, path, formatFlag)
	if err != nil {
		return err
	}

	// The plaintext lives in a directory only we can read, under the file's own base name
	// so that the editor picks the right syntax.
	dir, err := os.MkdirTemp("", "sealane-secret-edit-")
	if err != nil {
		return fmt.Errorf("create temporary directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	tmp := filepath.Join(dir, filepath.Base(path))
	if err := writeNewFile(tmp, e.plain, 0o600); err != nil {
		return err
	}
	return e.edit(cmd, tmp)
}

// secretEdit is a secret file being edited: what it held, decrypted, and how the edit is
// written back.
type secretEdit struct {
	k      *secretKind
	key    secret.Key
	path   string
	old    []byte // the file's content; nil when it does not exist
	exists bool
	plain  []byte // the decrypted content
	// format is the format to write; note, when not "", is said after saving: how the file's
	// format changed without --format.
	format secret.Format
	note   string
}

// openSecretEdit reads and decrypts the file at path, which need not exist, and picks the
// format to write: formatFlag, else werf's for a file in werf's format, else v2.
func openSecretEdit(k *secretKind, key secret.Key, path, formatFlag string) (*secretEdit, error) {
	old, err := os.ReadFile(path)
	e := &secretEdit{k: k, key: key, path: path, old: old, exists: err == nil}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	format, current := secret.FormatV2, secret.FormatPlain
	if e.exists {
		if e.plain, err = k.decrypt(path, old, key); err != nil {
			return nil, err
		}
		if current, err = k.format(path, old); err != nil {
			return nil, err
		}
		if current == secret.FormatWerf {
			format = secret.FormatWerf
		}
	}
	if formatFlag != "" {
		if format, err = secret.ParseFormat(formatFlag); err != nil {
			return nil, fmt.Errorf("--format: %w", err)
		}
	}
	e.format = format
	switch {
	case formatFlag != "":
	case current == secret.FormatWerfGCM:
		e.note = fmt.Sprintf("%s was in werf's AES-GCM format, which sealane reads but does not write; it is now in the v2 format, which werf cannot read (edit with --format werf to keep it readable by werf)", path)
	case current == secret.FormatMixed:
		e.note = fmt.Sprintf("%s had values in several formats; they are all in the v2 format now (use --format to choose)", path)
	}
	return e, nil
}

// edit opens tmp, the plaintext, in the editor until the edit is saved, changes nothing or
// is given up.
func (e *secretEdit) edit(cmd *cobra.Command, tmp string) error {
	path := e.path
	stderr := cmd.ErrOrStderr()
	for {
		if err := runEditor(cmd, tmp); err != nil {
			return fmt.Errorf("%w; %s left unchanged", err, path)
		}
		edited, err := os.ReadFile(tmp)
		if err != nil {
			return fmt.Errorf("read the edited file: %w; %s left unchanged", err, path)
		}
		if bytes.Equal(edited, e.plain) {
			_, _ = fmt.Fprintf(stderr, "%s: no changes\n", path)
			return nil
		}
		out, err := e.k.update(path, e.old, edited, e.key, e.format)
		if err == nil {
			return e.save(out, stderr)
		}
		// Let a person at a terminal fix a YAML mistake instead of losing the edit.
		if !isTerminal(cmd.InOrStdin()) || !askYesNo(cmd, fmt.Sprintf("%v\nEdit again? [Y/n] ", err)) {
			return fmt.Errorf("%w; %s left unchanged", err, path)
		}
	}
}

// save writes out, the encrypted edit, to the file (creating its directory for a new file)
// and says so on stderr.
func (e *secretEdit) save(out []byte, stderr io.Writer) error {
	if !e.exists {
		if err := os.MkdirAll(filepath.Dir(e.path), 0o755); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(e.path, out, 0o644); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stderr, "%s: saved, %s\n", e.path, e.format.Description())
	if e.note != "" {
		_, _ = fmt.Fprintf(stderr, "note: %s\n", e.note)
	}
	return nil
}

// runEditor opens file in $EDITOR (default vi); $EDITOR may hold arguments, split on spaces.
func runEditor(cmd *cobra.Command, file string) error {
	editor := strings.Fields(os.Getenv("EDITOR"))
	if len(editor) == 0 {
		editor = []string{"vi"}
	}
	c := exec.Command(editor[0], append(editor[1:], file)...)
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := c.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", strings.Join(editor, " "), err)
	}
	return nil
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func askYesNo(cmd *cobra.Command, prompt string) bool {
	_, _ = fmt.Fprint(cmd.ErrOrStderr(), prompt)
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if err != nil && line == "" {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "", "y", "yes":
		return true
	}
	return false
}
