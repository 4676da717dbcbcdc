//! Choosing a collection, and managing them, as the caller's token allows: a collection the
//! token does not name is answered as if it did not exist.

use crag_config::DEFAULT_COLLECTION;

use super::Api;
use crate::auth::Caller;
use crate::collections::{not_found, CollectionInfo, Collections};
use crate::error::AppError;

impl Api {
    /// This API bound to collection `name` (`None`: the default one); not found when it
    /// does not exist or the caller may not see it.
    pub async fn in_collection(
        &self,
        caller: &Caller,
        name: Option<&str>,
    ) -> Result<Api, AppError> {
        let name = name.filter(|n| !n.is_empty()).unwrap_or(DEFAULT_COLLECTION);
        if !caller.sees(name) {
            return Err(not_found(name));
        }
        Ok(Api {
            inner: self.inner.clone(),
            engine: self.inner.collections.get(name).await?,
        })
    }

    /// The collections.
    pub fn collections(&self) -> &Collections {
        &self.inner.collections
    }

    /// The collections the caller sees, `default` first.
    pub async fn list_collections(&self, caller: &Caller) -> Result<Vec<String>, AppError> {
        Ok(self
            .inner
            .collections
            .names()
            .await?
            .into_iter()
            .filter(|name| caller.sees(name))
            .collect())
    }

    /// Creates a collection; the caller must be an admin that sees the name.
    pub async fn create_collection(
        &self,
        caller: &Caller,
        name: &str,
        overrides: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CollectionInfo, AppError> {
        if !caller.admin || !caller.sees(name) {
            return Err(AppError::permission_denied(format!(
                "this token may not create collection `{}` ([[auth.scoped]] admin, collections)",
                name.escape_debug()
            )));
        }
        self.inner.collections.create(name, overrides).await
    }

    /// Describes a collection the caller sees.
    pub async fn describe_collection(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<CollectionInfo, AppError> {
        if !caller.sees(name) {
            return Err(not_found(name));
        }
        self.inner.collections.describe(name).await
    }

    /// Deletes a collection the caller sees; the caller must be an admin.
    pub async fn delete_collection(&self, caller: &Caller, name: &str) -> Result<(), AppError> {
        if !caller.sees(name) {
            return Err(not_found(name));
        }
        if !caller.admin {
            return Err(AppError::permission_denied(
                "this token may not delete collections ([[auth.scoped]] admin)",
            ));
        }
        self.inner.collections.delete(name).await
    }
}
