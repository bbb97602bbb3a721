package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/secret"
)

// Environment variables holding the old key for rotate-key, after --old-key.
const (
	envOldKey     = "SEALANE_OLD_SECRET_KEY"
	envWerfOldKey = "WERF_OLD_SECRET_KEY"
)

type rotateFlags struct {
	oldKey, newKey, dir, format string
}

func newSecretRotateKeyCmd(sf *secretFlags) *cobra.Command {
	f := &rotateFlags{}
	cmd := &cobra.Command{
		Use:     "rotate-key [FILE...]",
		Aliases: []string{"rotate-secret-key"},
		Short:   "Re-encrypt a chart's secrets (and other secret files) from an old key to a new one",
		Long: `Decrypt secrets with the old key and encrypt them with the new one, like
` + "`werf helm secret rotate-secret-key`" + `.

Without FILE arguments, the chart in --dir (default: the current directory; a werf
project's .helm/ is found) is rotated: its ` + secretValuesFile + ` and every file under its
secret/ directory. FILE arguments are rotated too (only they, unless --dir is given):
a file holding one encrypted value is a secret file, any other a secret values file.

The old key is --old-key, else $` + envOldKey + `, else $` + envWerfOldKey + `. The new key is
--new-key, else the usual key (--secret-key, $` + secret.EnvKey + `, $` + secret.EnvWerfKey + `,
` + secret.KeyFileName + ` in --dir or the current directory, ~/` + secret.GlobalKeyFile + `).

Every file is decrypted and re-encrypted in memory first; if any fails, nothing is written.
Then each file is replaced atomically (a temporary file renamed over it). Values keep their
format unless --format is given.`,
		Example: `  # werf style: old key in the environment, new key in .werf_secret_key
  WERF_OLD_SECRET_KEY=$(cat old.key) sealane secret rotate-key --dir . extra-secret-values.yaml

  # Explicit keys, converting werf-format secrets to v2
  sealane secret rotate-key --old-key "$OLD" --new-key "$NEW" --format v2 --dir ./chart`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRotateKey(cmd, sf, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.oldKey, "old-key", "", "key the secrets are encrypted with now (default $"+envOldKey+", $"+envWerfOldKey+")")
	fl.StringVar(&f.newKey, "new-key", "", "key to encrypt with (default: --secret-key and the usual key lookup)")
	fl.StringVar(&f.dir, "dir", "", "chart or werf project directory whose "+secretValuesFile+" and secret/ are rotated (default: the current directory when no FILE is given)")
	fl.StringVar(&f.format, "format", "", "write all values in this format: v2 or werf (default: each value keeps its format)")
	return cmd
}

// rotateTarget is one file rotate-key rewrites.
type rotateTarget struct {
	path string // as shown to the user
	real string // symlinks resolved: the file that is replaced
	kind *secretKind
	mode fs.FileMode
	old  []byte
	new  []byte
}

func runRotateKey(cmd *cobra.Command, sf *secretFlags, f *rotateFlags, args []string) error {
	oldKey, err := rotateOldKey(f.oldKey)
	if err != nil {
		return err
	}
	var newKey secret.Key
	if strings.TrimSpace(f.newKey) != "" {
		if newKey, err = secret.ParseKey(f.newKey); err != nil {
			return fmt.Errorf("--new-key: %w", err)
		}
	} else if newKey, err = sf.loadKeyIn(f.dir); err != nil {
		return fmt.Errorf("new key: %w", err)
	}
	var format secret.Format
	if f.format != "" {
		if format, err = secret.ParseFormat(f.format); err != nil {
			return fmt.Errorf("--format: %w", err)
		}
	}

	targets, err := rotateTargets(f.dir, args)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range targets {
		if t.new, err = t.kind.rotate(t.path, t.old, oldKey, newKey, format); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("nothing was changed:\n%w", errors.Join(errs...))
	}
	changed, err := replaceAll(targets)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	for _, t := range changed {
		_, _ = fmt.Fprintf(out, "rotated %s %s\n", t.kind.noun, t.path)
	}
	_, _ = fmt.Fprintf(out, "%d file(s) re-encrypted from key %s to key %s\n", len(changed), oldKey.ID(), newKey.ID())
	return nil
}

func rotateOldKey(flag string) (secret.Key, error) {
	src, v := "--old-key", flag
	if strings.TrimSpace(v) == "" {
		src, v = "$"+envOldKey, os.Getenv(envOldKey)
	}
	if strings.TrimSpace(v) == "" {
		src, v = "$"+envWerfOldKey, os.Getenv(envWerfOldKey)
	}
	if strings.TrimSpace(v) == "" {
		return secret.Key{}, fmt.Errorf("no old secret key: give --old-key or set $%s or $%s", envOldKey, envWerfOldKey)
	}
	k, err := secret.ParseKey(v)
	if err != nil {
		return secret.Key{}, fmt.Errorf("old key from %s: %w", src, err)
	}
	return k, nil
}

// rotateTargets lists the files to rotate: the chart's secrets (when dir is given or there
// are no files) and the files given, each once, with their content.
func rotateTargets(dir string, files []string) ([]*rotateTarget, error) {
	set := &rotateSet{seen: map[string]bool{}}
	if dir != "" || len(files) == 0 {
		if dir == "" {
			dir = "."
		}
		if err := set.addChartDir(dir, len(files) == 0); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := set.add(f, nil); err != nil {
			return nil, err
		}
	}
	return set.targets, nil
}

// rotateSet collects the files to rotate, each once however it is named (links resolved).
type rotateSet struct {
	targets []*rotateTarget
	seen    map[string]bool
}

// add adds the file at path as kind; a nil kind is guessed from its content (an encrypted
// file, else secret values).
func (s *rotateSet) add(path string, kind *secretKind) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	if real, err = filepath.Abs(real); err != nil {
		return err
	}
	if s.seen[real] {
		return nil
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory: give a chart directory with --dir", path)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return err
	}
	if kind == nil {
		kind = valuesKind
		if secret.FormatOf(data) != secret.FormatPlain {
			kind = fileKind
		}
	}
	s.seen[real] = true
	s.targets = append(s.targets, &rotateTarget{path: path, real: real, kind: kind, mode: fi.Mode().Perm(), old: data})
	return nil
}

// addChartDir adds the chart's secret values file and every file below its secret directory;
// finding neither is an error when nothing else is to be rotated (only).
func (s *rotateSet) addChartDir(dir string, only bool) error {
	if fi, err := os.Stat(dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("--dir %s: not a directory", dir)
	}
	chartDir, err := chart.ResolveDir(dir)
	if err != nil {
		chartDir = dir // a directory with secrets but no Chart.yaml is fine too
	}
	found := false
	values := filepath.Join(chartDir, secretValuesFile)
	if _, err := os.Stat(values); err == nil {
		found = true
		if err := s.add(values, valuesKind); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	secretDir := filepath.Join(chartDir, secret.SecretDir)
	if fi, err := os.Stat(secretDir); err == nil && fi.IsDir() {
		found = true
		err := filepath.WalkDir(secretDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
					return err // a symlink to a directory is not followed
				}
			} else if !d.Type().IsRegular() {
				return nil
			}
			return s.add(p, fileKind)
		})
		if err != nil {
			return err
		}
	}
	if !found && only {
		return fmt.Errorf("%s: no %s and no %s/ directory: nothing to rotate", chartDir, secretValuesFile, secret.SecretDir)
	}
	return nil
}

// replaceAll writes the new content of every changed target: first all temporary files, then
// the renames. If a rename fails, the files already replaced get their old content back. It
// returns the targets it changed.
func replaceAll(targets []*rotateTarget) ([]*rotateTarget, error) {
	var changed []*rotateTarget
	for _, t := range targets {
		if !bytes.Equal(t.old, t.new) {
			changed = append(changed, t)
		}
	}
	temps := make([]string, len(changed))
	cleanup := func() {
		for _, tmp := range temps {
			if tmp != "" {
				_ = os.Remove(tmp)
			}
		}
	}
	for i, t := range changed {
		tmp, err := writeTemp(t.real, t.new, t.mode)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("%s: %w; nothing was changed", t.path, err)
		}
		temps[i] = tmp
	}
	for i, t := range changed {
		if err := os.Rename(temps[i], t.real); err != nil {
			cleanup()
			var restoreErrs []error
			for _, done := range changed[:i] {
				if err := writeFileAtomic(done.real, done.old, done.mode); err != nil {
					restoreErrs = append(restoreErrs, fmt.Errorf("%s: %w", done.path, err))
				}
			}
			if len(restoreErrs) > 0 {
				return nil, fmt.Errorf("%s: %w; restoring the files already rotated failed too (they hold the new key): %w", t.path, err, errors.Join(restoreErrs...))
			}
			return nil, fmt.Errorf("%s: %w; nothing was changed", t.path, err)
		}
		temps[i] = ""
	}
	return changed, nil
}

// writeFileAtomic replaces path with data through a temporary file in the same directory.
// An existing file keeps its permissions; a new one gets perm.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
	}
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data into a new temporary file next to path and returns its name.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".sealane-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// writeNewFile creates path, which must not exist, with data and perm.
func writeNewFile(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
