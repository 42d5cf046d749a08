"""The signed report: model, DSSE/in-toto signing, verification, rendered views."""
