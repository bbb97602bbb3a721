package kube

import (
	"testing"

	"k8s.io/client-go/rest"
)

// TestAs: a cluster as a user impersonates it in every client's config, shares the REST
// mapper, is kept per user, and leaves the service's own cluster unchanged.
func TestAs(t *testing.T) {
	c, err := NewCluster("sandbox", &rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if own, err := c.As(""); err != nil || own != c {
		t.Fatalf(`As("") = %v, %v; want the cluster itself`, own, err)
	}
	const user = "system:serviceaccount:team-a:deployer"
	as, err := c.As(user)
	if err != nil {
		t.Fatal(err)
	}
	if as.Config.Impersonate.UserName != user || as.Impersonated() != user || as.Name != "sandbox" {
		t.Errorf("As = %s impersonating %q (config %q)", as.Name, as.Impersonated(), as.Config.Impersonate.UserName)
	}
	if as.Mapper != c.Mapper || as.Typed == c.Typed || as.Dynamic == c.Dynamic || as.Metadata == c.Metadata {
		t.Error("want the mapper shared and the clients the user's own")
	}
	if again, _ := c.As(user); again != as {
		t.Error("As built a second cluster for the same user")
	}
	if other, _ := c.As("system:serviceaccount:team-b:deployer"); other == as {
		t.Error("two users share a cluster")
	}
	if c.Config.Impersonate.UserName != "" || c.Impersonated() != "" {
		t.Error("the service's own cluster impersonates")
	}
}
