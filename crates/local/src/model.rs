//! Loaded models: each GGUF file is loaded once per process, on a thread of its
//! own that owns the model and its context and runs one generation at a time.
//! Every [`LocalProvider`](crate::LocalProvider) built for the same file shares it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use llama_cpp_2::llama_backend::LlamaBackend;

use crate::config::LocalConfig;
use crate::engine::{self, Job};
use crate::error::LocalError;
use crate::template::ChatTemplate;

/// What is known about a loaded model.
#[derive(Debug)]
pub struct ModelInfo {
    /// The context the model runs with, in tokens.
    pub context: u32,
    /// The model's chat template, ready to render.
    pub template: ChatTemplate,
    /// The model's parameter count.
    pub parameters: u64,
}

/// A loaded model: its description and the queue of its worker thread.
#[derive(Debug)]
pub struct LoadedModel {
    /// The model file.
    pub path: PathBuf,
    /// What is known about it.
    pub info: ModelInfo,
    jobs: Mutex<mpsc::Sender<Job>>,
}

impl LoadedModel {
    /// Queues `job` for the worker thread.
    pub fn submit(&self, job: Job) -> Result<(), LocalError> {
        let jobs = self.jobs.lock().map_err(|_| LocalError::WorkerGone)?;
        jobs.send(job).map_err(|_| LocalError::WorkerGone)
    }
}

fn backend() -> Result<&'static LlamaBackend, LocalError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            // llama.cpp logs to stderr by default; ours goes through `tracing`.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            Ok(backend)
        })
        .as_ref()
        .map_err(|message| LocalError::Backend {
            message: message.clone(),
        })
}

type Cache = Mutex<HashMap<PathBuf, Arc<LoadedModel>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The loaded model for `config.model_path`: from the process-wide cache, or
/// loaded now (blocking: call it off the async threads). The thread count and
/// context cap of the first load stay for the life of the process.
pub fn load(config: &LocalConfig) -> Result<Arc<LoadedModel>, LocalError> {
    let key = std::fs::canonicalize(&config.model_path).map_err(|error| LocalError::Load {
        path: config.model_path.clone(),
        message: error.to_string(),
    })?;
    // Holding the lock while loading makes a second caller for the same file wait
    // for the first load instead of loading the model twice.
    let mut models = cache().lock().map_err(|_| LocalError::Load {
        path: key.clone(),
        message: "the model cache is poisoned".into(),
    })?;
    if let Some(model) = models.get(&key) {
        return Ok(Arc::clone(model));
    }
    let model = Arc::new(spawn_worker(&key, config)?);
    models.insert(key, Arc::clone(&model));
    Ok(model)
}

fn spawn_worker(path: &Path, config: &LocalConfig) -> Result<LoadedModel, LocalError> {
    let backend = backend()?;
    let (ready_tx, ready_rx) = mpsc::channel::<Result<ModelInfo, LocalError>>();
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let worker_path = path.to_path_buf();
    let worker_config = config.clone();
    std::thread::Builder::new()
        .name("oxydra-local-model".into())
        .spawn(move || {
            engine::serve(backend, &worker_path, &worker_config, &ready_tx, &jobs_rx);
        })
        .map_err(|error| LocalError::Load {
            path: path.to_path_buf(),
            message: format!("could not start the model thread: {error}"),
        })?;
    let info = ready_rx.recv().map_err(|_| LocalError::WorkerGone)??;
    Ok(LoadedModel {
        path: path.to_path_buf(),
        info,
        jobs: Mutex::new(jobs_tx),
    })
}
