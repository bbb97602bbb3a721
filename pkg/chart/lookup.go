package chart

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// lookupClients serve the templates' `lookup` from a cluster as Helm's engine does, except
// that an object the identity may not read is one that is not there: Helm fails the render
// with the apiserver's Forbidden; here `lookup` returns an empty result, as for an object
// that does not exist, so that a tenant's render learns nothing about what it may not read
// (not even that it exists) and `if not (lookup ...)` charts keep working.
type lookupClients struct{ config *rest.Config }

// GetClientFor returns the client of apiVersion's kind and whether it is namespaced
// (engine.ClientProvider).
func (l lookupClients) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, fmt.Errorf("lookup %s %s: %w", apiVersion, kind, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(l.config)
	if err != nil {
		return nil, false, fmt.Errorf("lookup %s %s: discovery client: %w", apiVersion, kind, err)
	}
	list, err := dc.ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		return nil, false, fmt.Errorf("lookup %s %s: unable to get apiresource: %w", apiVersion, kind, err)
	}
	var res *metav1.APIResource
	for i, r := range list.APIResources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			res = &list.APIResources[i]
			break
		}
	}
	if res == nil { // as Helm: an unknown kind gives an empty resource name, and the request fails
		res = &metav1.APIResource{}
	}
	dyn, err := dynamic.NewForConfig(l.config)
	if err != nil {
		return nil, false, fmt.Errorf("lookup %s %s: dynamic client: %w", apiVersion, kind, err)
	}
	gvr := gv.WithResource(res.Name)
	return deniedIsMissing{NamespaceableResourceInterface: dyn.Resource(gvr), gr: gvr.GroupResource()}, res.Namespaced, nil
}

// deniedIsMissing answers Forbidden reads as NotFound ones.
type deniedIsMissing struct {
	dynamic.NamespaceableResourceInterface
	gr schema.GroupResource
}

func (d deniedIsMissing) Namespace(ns string) dynamic.ResourceInterface {
	return deniedIsMissingIn{ResourceInterface: d.NamespaceableResourceInterface.Namespace(ns), gr: d.gr}
}

func (d deniedIsMissing) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	o, err := d.NamespaceableResourceInterface.Get(ctx, name, opts, sub...)
	return o, missingIfDenied(err, d.gr, name)
}

func (d deniedIsMissing) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	o, err := d.NamespaceableResourceInterface.List(ctx, opts)
	return o, missingIfDenied(err, d.gr, "")
}

type deniedIsMissingIn struct {
	dynamic.ResourceInterface
	gr schema.GroupResource
}

func (d deniedIsMissingIn) Get(ctx context.Context, name string, opts metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	o, err := d.ResourceInterface.Get(ctx, name, opts, sub...)
	return o, missingIfDenied(err, d.gr, name)
}

func (d deniedIsMissingIn) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	o, err := d.ResourceInterface.List(ctx, opts)
	return o, missingIfDenied(err, d.gr, "")
}

// missingIfDenied turns a Forbidden error into a NotFound one (which `lookup` answers with
// an empty result); other errors are kept.
func missingIfDenied(err error, gr schema.GroupResource, name string) error {
	if apierrors.IsForbidden(err) {
		return apierrors.NewNotFound(gr, name)
	}
	return err
}
