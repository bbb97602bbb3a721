package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/secret"
)

// secretValuesFile is a chart's own encrypted values file.
const secretValuesFile = "secret-values.yaml"

// secretFlags are the flags every `sealane secret` command shares.
type secretFlags struct {
	key string
}

// loadKey finds the secret key: --secret-key, then the places secret.LoadKey looks in, with
// .werf_secret_key in the current directory. The error says where it looked and how to make
// a key; it never holds the key.
func (sf *secretFlags) loadKey() (secret.Key, error) {
	return sf.loadKeyIn("")
}

// loadKeyIn is loadKey with .werf_secret_key looked for in workDir ("" is the current
// directory), as deploy looks for it in the project directory.
func (sf *secretFlags) loadKeyIn(workDir string) (secret.Key, error) {
	k, _, err := secret.LoadKey(sf.key, workDir)
	return k, err
}

func newSecretCmd() *cobra.Command {
	sf := &secretFlags{}
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Generate keys; encrypt, decrypt and edit secret values and secret files; rotate keys (werf-compatible)",
		Long: `Work with encrypted secret values files (secret-values.yaml, --secret-values) and secret
files (a chart's secret/ directory, read by werf_secret_file), compatible with
` + "`werf helm secret ...`" + `.

The key is taken from --secret-key, else $` + secret.EnvKey + `, $` + secret.EnvWerfKey + `,
./` + secret.KeyFileName + ` and ~/` + secret.GlobalKeyFile + `, in that order.
Make one with ` + "`sealane secret generate-key`" + `.

Two formats are written: v2 (AES-GCM, authenticated; the default) and werf (werf's
AES-CBC format, not authenticated; --format werf, for files werf must read). Both,
and werf's AES-GCM format, are read.`,
	}
	cmd.PersistentFlags().StringVar(&sf.key, "secret-key", "", "secret key, 32/48/64 hex characters (default: $"+secret.EnvKey+", $"+secret.EnvWerfKey+", ./"+secret.KeyFileName+", ~/"+secret.GlobalKeyFile+"); prefer those over this flag, which shows in the process list")
	cmd.AddCommand(
		newSecretGenerateKeyCmd(),
		newSecretKindCmd(sf, valuesKind),
		newSecretKindCmd(sf, fileKind),
		newSecretRotateKeyCmd(sf),
		newSecretInfoCmd(),
	)
	return cmd
}

func newSecretGenerateKeyCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "generate-key",
		Aliases: []string{"generate-secret-key"},
		Short:   "Print a new random secret key (AES-128, 32 hex characters)",
		Example: `  # Save it as the project's key (do not commit this file)
  sealane secret generate-key > .werf_secret_key

  # Or export it
  export SEALANE_SECRET_KEY=$(sealane secret generate-key)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := secret.GenerateKey()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k)
			return err
		},
	}
}

// secretKind is what differs between secret values files and secret files.
type secretKind struct {
	name, noun string
	encrypt    func(name string, data []byte, key secret.Key, f secret.Format) ([]byte, error)
	decrypt    func(name string, data []byte, key secret.Key) ([]byte, error)
	// update encrypts the edited plaintext of the file whose old content is old.
	update func(name string, old, plain []byte, key secret.Key, f secret.Format) ([]byte, error)
	rotate func(name string, data []byte, oldKey, newKey secret.Key, f secret.Format) ([]byte, error)
	// format tells the format an existing file is written in.
	format func(name string, data []byte) (secret.Format, error)
}

var valuesKind = &secretKind{
	name:    "values",
	noun:    "secret values file",
	encrypt: secret.EncryptValues,
	decrypt: secret.DecryptValues,
	update:  secret.UpdateValues,
	rotate:  secret.RotateValues,
	format:  secret.ValuesFormat,
}

var fileKind = &secretKind{
	name:    "file",
	noun:    "secret file",
	encrypt: secret.EncryptFile,
	decrypt: secret.DecryptFile,
	update: func(name string, _, plain []byte, key secret.Key, f secret.Format) ([]byte, error) {
		return secret.EncryptFile(name, plain, key, f)
	},
	rotate: secret.RotateFile,
	format: func(_ string, data []byte) (secret.Format, error) { return secret.FormatOf(data), nil },
}

func newSecretKindCmd(sf *secretFlags, k *secretKind) *cobra.Command {
	cmd := &cobra.Command{
		Use:   k.name,
		Short: "Encrypt, decrypt or edit a " + k.noun,
	}
	if k == valuesKind {
		cmd.Long = `A secret values file is a YAML values file whose leaf values are encrypted one by one;
keys, order and comments stay readable.`
	} else {
		cmd.Long = `A secret file (under a chart's secret/ directory, read with werf_secret_file) is encrypted
as a whole into one line.`
	}
	cmd.AddCommand(newSecretCryptCmd(sf, k, true), newSecretCryptCmd(sf, k, false), newSecretEditCmd(sf, k))
	return cmd
}

// newSecretCryptCmd is `secret values|file encrypt|decrypt [FILE]`.
func newSecretCryptCmd(sf *secretFlags, k *secretKind, encrypt bool) *cobra.Command {
	var output, format string
	verb, example := "decrypt", ""
	if encrypt {
		verb = "encrypt"
	}
	switch {
	case k == valuesKind && encrypt:
		example = `  sealane secret values encrypt values-plain.yaml -o .helm/secret-values.yaml
  sealane secret values encrypt --format werf < plain.yaml > secret-values.yaml`
	case k == valuesKind:
		example = `  sealane secret values decrypt .helm/secret-values.yaml`
	case encrypt:
		example = `  sealane secret file encrypt tls.key -o .helm/secret/tls.key`
	default:
		example = `  sealane secret file decrypt .helm/secret/tls.key -o tls.key`
	}
	cmd := &cobra.Command{
		Use:     verb + " [FILE]",
		Short:   strings.ToUpper(verb[:1]) + verb[1:] + " a " + k.noun + " (FILE or stdin) to stdout or --output",
		Example: example,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := sf.loadKey()
			if err != nil {
				return err
			}
			name, in, err := readInput(cmd, args)
			if err != nil {
				return err
			}
			var out []byte
			perm := os.FileMode(0o600)
			if encrypt {
				f, err := secret.ParseFormat(format)
				if err != nil {
					return fmt.Errorf("--format: %w", err)
				}
				if out, err = k.encrypt(name, in, key, f); err != nil {
					return err
				}
				perm = 0o644
			} else if out, err = k.decrypt(name, in, key); err != nil {
				return err
			}
			if output == "" {
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}
			if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
				return err
			}
			return writeFileAtomic(output, out, perm)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&output, "output", "o", "", "write to this file instead of stdout (replaced atomically; a new decrypted file is created with mode 0600)")
	fl.StringVar(&output, "output-file-path", "", "alias of --output (werf's name)")
	_ = fl.MarkHidden("output-file-path")
	if encrypt {
		fl.StringVar(&format, "format", string(secret.FormatV2), "v2 (AES-GCM, authenticated) or werf (werf's AES-CBC format, for files werf must read)")
	}
	return cmd
}

// readInput reads FILE, or stdin when there is no argument or it is "-".
func readInput(cmd *cobra.Command, args []string) (string, []byte, error) {
	if len(args) == 0 || args[0] == "-" {
		data, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return "", nil, fmt.Errorf("read stdin: %w", err)
		}
		return "<stdin>", data, nil
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return "", nil, err // *fs.PathError names the file
	}
	return args[0], data, nil
}

func newSecretInfoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info FILE...",
		Short: "Tell whether each FILE is a secret values file or a secret file and which format it uses (no key needed)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			for _, path := range args {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				kind := valuesKind
				if secret.FormatOf(data) != secret.FormatPlain {
					kind = fileKind
				}
				f, err := kind.format(path, data)
				if err != nil {
					// Neither one encrypted value nor YAML: some plain file.
					_, _ = fmt.Fprintf(out, "%s: %s\n", path, secret.FormatPlain.Description())
					continue
				}
				_, _ = fmt.Fprintf(out, "%s: %s, %s\n", path, kind.noun, f.Description())
			}
			return nil
		},
	}
}
