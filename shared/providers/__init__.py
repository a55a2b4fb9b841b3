"""Providers: what starts, checks and stops workers, behind one small port (`base.Provider`).

- `local`: processes on this machine (`local.LocalProvider`);
- `static`: workers people start themselves (`static.StaticProvider`);
- `azure-container-apps`: one Azure Container Apps job execution per worker
  (`azure_container_apps.ContainerAppsProvider`, imported where it is configured: it needs
  the Azure SDK and a credential).
"""
