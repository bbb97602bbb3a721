// Package tracing gives every deploy one OpenTelemetry trace across the client and the four
// stages: it configures the SDK from the standard OTEL_* environment (off, with the no-op
// provider, when no endpoint is set), carries the trace context on events (the CloudEvents
// distributed-tracing extension) and NATS headers (W3C traceparent), opens the spans sealane
// records and names the log fields that tie a log line to its deploy and trace.
package tracing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// EnvTracesFile names a file the spans are appended to as JSON lines (one stdouttrace span
// per line), besides or instead of OTLP: sealane's own switch, for tests and for reading a
// trace without a collector.
const EnvTracesFile = "SEALANE_TRACES_FILE"

// Options configure Setup beyond the environment.
type Options struct {
	// ServiceName is the service.name resource attribute unless OTEL_SERVICE_NAME (or
	// OTEL_RESOURCE_ATTRIBUTES) sets one; e.g. "sealane-applier".
	ServiceName string
	// Exporter, when set, receives the spans whatever the environment says: tracing on
	// in-process (benchmarks, tests).
	Exporter sdktrace.SpanExporter
}

// on says Setup installed a provider: off, spans are not even started (no attributes built,
// no context parsed), which keeps the cost per event near zero.
var on atomic.Bool

// Enabled reports whether tracing is on in this process.
func Enabled() bool { return on.Load() }

// Shutdown flushes the spans not yet exported and turns tracing off again.
type Shutdown func(context.Context) error

// Setup installs the process's tracer provider and returns its Shutdown, which every main
// calls on exit (SIGTERM included) so that no span is lost. Tracing is on when opts.Exporter
// is set, OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT names a collector
// (protocol from OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: http/protobuf, the default, or grpc), or
// SEALANE_TRACES_FILE names a file; OTEL_SDK_DISABLED=true turns it off whatever else is set.
// Off, the global provider stays the no-op one and spans cost next to nothing. The sampler
// follows OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on).
func Setup(ctx context.Context, opts Options) (Shutdown, error) {
	exporters, err := exportersFromEnv(ctx, opts)
	if err != nil || len(exporters) == 0 {
		return func(context.Context) error { return nil }, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", cmp.Or(opts.ServiceName, "sealane"))),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range exporters {
		tpOpts = append(tpOpts, sdktrace.WithBatcher(e))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	otel.SetTracerProvider(tp)
	on.Store(true)
	return func(ctx context.Context) error {
		on.Store(false)
		otel.SetTracerProvider(noop.NewTracerProvider())
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracing: flush spans: %w", err)
		}
		return nil
	}, nil
}

// exportersFromEnv builds the exporters the options and the environment ask for.
func exportersFromEnv(ctx context.Context, opts Options) ([]sdktrace.SpanExporter, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	var out []sdktrace.SpanExporter
	if opts.Exporter != nil {
		out = append(out, opts.Exporter)
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		e, err := otlpExporter(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if path := os.Getenv(EnvTracesFile); path != "" {
		e, err := fileExporter(path)
		if err != nil {
			return nil, errors.Join(append([]error{err}, shutdownAll(ctx, out)...)...)
		}
		out = append(out, e)
	}
	return out, nil
}

// otlpExporter is the OTLP exporter of the protocol the environment names; the exporter reads
// the endpoint, headers, TLS and timeout settings from the environment itself.
func otlpExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	protocol := cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
	var (
		e   sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "grpc":
		e, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		e, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP %s exporter: %w", protocol, err)
	}
	return e, nil
}

// fileExporter appends spans to path as JSON lines; closing the file is part of its shutdown.
func fileExporter(path string) (sdktrace.SpanExporter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tracing: %s: %w", EnvTracesFile, err)
	}
	e, err := stdouttrace.New(stdouttrace.WithWriter(f))
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("tracing: file exporter: %w", err)
	}
	return closingExporter{SpanExporter: e, close: f.Close}, nil
}

// closingExporter closes its file after the exporter shut down.
type closingExporter struct {
	sdktrace.SpanExporter
	close func() error
}

func (c closingExporter) Shutdown(ctx context.Context) error {
	return errors.Join(c.SpanExporter.Shutdown(ctx), c.close())
}

func shutdownAll(ctx context.Context, es []sdktrace.SpanExporter) []error {
	var errs []error
	for _, e := range es {
		errs = append(errs, e.Shutdown(ctx))
	}
	return errs
}
