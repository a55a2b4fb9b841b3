"""The secrets service (Taskcluster's secrets): values kept encrypted at rest."""
