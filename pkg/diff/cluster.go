package diff

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
)

// cluster is what Changes asks of a cluster: reads and dry-run writes, nothing that changes
// it. Every write method sends dryRun=All.
type cluster interface {
	mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error)
	// get returns the live object, or nil when it does not exist.
	get(ctx context.Context, ref manifest.Ref) (*unstructured.Unstructured, error)
	dryRunApply(ctx context.Context, body *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error)
	dryRunPatch(ctx context.Context, ref manifest.Ref, pt types.PatchType, patch []byte, manager string) (*unstructured.Unstructured, error)
	dryRunCreate(ctx context.Context, body *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error)
	dryRunDelete(ctx context.Context, ref manifest.Ref, uid types.UID, propagation metav1.DeletionPropagation) error
}

// kubeCluster is cluster over a *kube.Cluster.
type kubeCluster struct{ c *kube.Cluster }

var dryRunAll = []string{metav1.DryRunAll}

func (k kubeCluster) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	return k.c.Mapping(gvk)
}

func (k kubeCluster) get(ctx context.Context, ref manifest.Ref) (*unstructured.Unstructured, error) {
	ri, _, err := k.c.ResourceFor(ref)
	if err != nil {
		return nil, err
	}
	live, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get current state: %w", err)
	}
	return live, nil
}

func (k kubeCluster) dryRunApply(ctx context.Context, body *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	ri, _, err := k.c.ResourceFor(manifest.RefOf(body))
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(body.Object)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	force := true
	return ri.Patch(ctx, body.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager, Force: &force, DryRun: dryRunAll})
}

func (k kubeCluster) dryRunPatch(ctx context.Context, ref manifest.Ref, pt types.PatchType, patch []byte, manager string) (*unstructured.Unstructured, error) {
	ri, _, err := k.c.ResourceFor(ref)
	if err != nil {
		return nil, err
	}
	return ri.Patch(ctx, ref.Name, pt, patch, metav1.PatchOptions{FieldManager: manager, DryRun: dryRunAll})
}

func (k kubeCluster) dryRunCreate(ctx context.Context, body *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	ri, _, err := k.c.ResourceFor(manifest.RefOf(body))
	if err != nil {
		return nil, err
	}
	return ri.Create(ctx, body, metav1.CreateOptions{FieldManager: manager, DryRun: dryRunAll})
}

func (k kubeCluster) dryRunDelete(ctx context.Context, ref manifest.Ref, uid types.UID, propagation metav1.DeletionPropagation) error {
	ri, _, err := k.c.ResourceFor(ref)
	if err != nil {
		return err
	}
	return ri.Delete(ctx, ref.Name, metav1.DeleteOptions{DryRun: dryRunAll, PropagationPolicy: &propagation,
		Preconditions: &metav1.Preconditions{UID: &uid}})
}
