package githook_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sealane/sealane/pkg/githook"
)

// A receiver checks the content type, verifies the delivery against its secrets and then
// reads it.
func Example() {
	secret, err := githook.NewSecret("It's a Secret to Everybody")
	if err != nil {
		panic(err)
	}
	body := []byte(`{"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246",` +
		`"after":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c","repository":{"full_name":"acme/app",` +
		`"clone_url":"https://github.com/acme/app.git"},"pusher":{"name":"octocat"}}`)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-GitHub-Event", "push")
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	h.Set("X-Hub-Signature-256", githook.SignGitHub([]byte("It's a Secret to Everybody"), body))
	req := githook.Request{Header: h, Body: body, Now: time.Now()}

	if !githook.AcceptsContentType(githook.GitHub, h.Get("Content-Type")) {
		panic("content type")
	}
	if err := githook.Verify(githook.GitHub, req, []githook.Secret{secret}); err != nil {
		panic(err)
	}
	d, err := githook.Parse(githook.GitHub, req)
	if err != nil {
		panic(err)
	}
	p := d.Pushes[0]
	fmt.Println(d.Kind, p.Repository, p.Branch, p.Commit)
	// Output: push acme/app main 0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c
}
