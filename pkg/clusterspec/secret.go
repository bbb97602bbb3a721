package clusterspec

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// FromSecret reads a cluster Secret. Every error names the Secret and what to fix; nothing in
// an error or in the Spec's Source is a credential.
func FromSecret(s *corev1.Secret) (Spec, error) {
	where := "Secret " + s.Namespace + "/" + s.Name
	name, ok := s.Labels[ClusterLabel]
	if !ok {
		return Spec{}, fmt.Errorf("%s: no %s label naming the cluster", where, ClusterLabel)
	}
	if err := ValidateName(name); err != nil {
		return Spec{}, fmt.Errorf("%s: label %s: %w", where, ClusterLabel, err)
	}
	spec := Spec{Name: name, Labels: map[string]string{}, Source: "secret " + s.Namespace + "/" + s.Name}
	for k, v := range s.Labels {
		if key, ok := strings.CutPrefix(k, LabelPrefix); ok {
			spec.Labels[key] = v
		}
	}
	kubeconfig, hasKubeconfig := s.Data[KubeconfigKey]
	inCluster, hasInCluster := s.Data[InClusterKey]
	switch {
	case hasKubeconfig && hasInCluster:
		return Spec{}, fmt.Errorf("%s: has both %q and %q: keep one", where, KubeconfigKey, InClusterKey)
	case hasInCluster:
		if v := strings.TrimSpace(string(inCluster)); v != "true" {
			return Spec{}, fmt.Errorf("%s: %q is %q: the only value is \"true\" (or give %q instead)", where, InClusterKey, v, KubeconfigKey)
		}
		spec.InCluster = true
		return spec, nil
	case !hasKubeconfig:
		return Spec{}, fmt.Errorf("%s: no %q data key (the cluster's kubeconfig) and no %q: add it with `sealane cluster add %s --kubeconfig FILE`",
			where, KubeconfigKey, InClusterKey, name)
	}
	where += " key " + KubeconfigKey
	cfg, err := DecodeKubeconfig(kubeconfig, where)
	if err != nil {
		return Spec{}, err
	}
	if spec.Kubeconfig, err = SelfContained(cfg, "", where); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// NewSecret returns the cluster Secret of spec in namespace: named SecretName, labelled, with
// the kubeconfig or the in-cluster marker.
func NewSecret(namespace string, spec Spec) (*corev1.Secret, error) {
	if err := ValidateName(spec.Name); err != nil {
		return nil, err
	}
	if err := ValidateLabels(spec.Labels); err != nil {
		return nil, err
	}
	lbl := map[string]string{ClusterLabel: spec.Name}
	for k, v := range spec.Labels {
		lbl[LabelPrefix+k] = v
	}
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(spec.Name), Namespace: namespace, Labels: lbl},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{},
	}
	if spec.InCluster {
		s.Data[InClusterKey] = []byte("true")
		return s, nil
	}
	if spec.Kubeconfig == nil {
		return nil, fmt.Errorf("cluster %s: no kubeconfig and not in-cluster", spec.Name)
	}
	cfg, err := SelfContained(spec.Kubeconfig, "", "cluster "+spec.Name)
	if err != nil {
		return nil, err
	}
	if s.Data[KubeconfigKey], err = EncodeKubeconfig(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// Select returns the specs whose labels match selector (Kubernetes label-selector syntax:
// "env=prod,region in (eu,us)"; empty selects all), sorted by name.
func Select(specs []Spec, selector string) ([]Spec, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("selector %q: %w", selector, err)
	}
	var out []Spec
	for _, s := range specs {
		if sel.Matches(labels.Set(s.Labels)) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
