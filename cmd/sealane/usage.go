package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// printUsage is the usage of every command: cobra's layout, with the command's NATS
// connection flags under a heading of their own between its other flags and the global ones.
func printUsage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\n\nAliases:\n  %s", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, conn := splitFlags(c.LocalFlags())
	flagSection(&b, "Flags", own)
	flagSection(&b, "NATS connection flags", conn)
	flagSection(&b, "Global Flags", c.InheritedFlags())
	if c.HasHelpSubCommands() {
		b.WriteString("\n\nAdditional help topics:")
		for _, sub := range c.Commands() {
			if sub.IsAdditionalHelpTopicCommand() {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.CommandPathPadding(), sub.CommandPath(), sub.Short)
			}
		}
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}

// splitFlags separates the NATS connection flags (conn) from the others (own).
func splitFlags(fs *pflag.FlagSet) (own, conn *pflag.FlagSet) {
	own = pflag.NewFlagSet("own", pflag.ContinueOnError)
	conn = pflag.NewFlagSet("nats", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if inNATSGroup(f) {
			conn.AddFlag(f)
		} else {
			own.AddFlag(f)
		}
	})
	return own, conn
}

// flagSection writes the usages of fs's visible flags under title, if it has any.
func flagSection(b *strings.Builder, title string, fs *pflag.FlagSet) {
	if usages := strings.TrimRight(fs.FlagUsages(), " \t\r\n"); usages != "" {
		fmt.Fprintf(b, "\n\n%s:\n%s", title, usages)
	}
}
