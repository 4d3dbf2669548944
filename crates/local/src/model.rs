//! Loaded models: each GGUF file is loaded once per process, on a thread of its
//! own that owns the model and its context and runs one generation at a time.
//! Every [`LocalProvider`](crate::LocalProvider) built for the same file shares it.
//!
//! The process owns these threads until it ends: [`stop_all`] stops every model's
//! decoding at its next token (or prompt chunk) and joins its thread, so that no exit path of a
//! program runs the C++ static destructors while llama.cpp is still computing on
//! another thread (that race ended processes with SIGSEGV).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, TryLockError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use llama_cpp_2::llama_backend::LlamaBackend;

use crate::config::LocalConfig;
use crate::engine::{self, Job};
use crate::error::LocalError;
use crate::model_info::ModelInfo;

/// A loaded model: its description and the queue of its worker thread.
#[derive(Debug)]
pub struct LoadedModel {
    /// The model file.
    pub path: PathBuf,
    /// What is known about it.
    pub info: ModelInfo,
    /// The worker's queue; `None` once the model is stopped.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    /// Set to stop the worker: the running job ends at its next token or prompt
    /// chunk.
    stop: Arc<AtomicBool>,
    /// The worker thread, until it is joined.
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl LoadedModel {
    /// Queues `job` for the worker thread.
    pub fn submit(&self, job: Job) -> Result<(), LocalError> {
        let jobs = self.jobs.lock().map_err(|_| LocalError::WorkerGone)?;
        let jobs = jobs.as_ref().ok_or(LocalError::WorkerGone)?;
        jobs.send(job).map_err(|_| LocalError::WorkerGone)
    }

    /// Asks the worker to stop: the running job ends at its next token (or prompt
    /// chunk), queued ones before they start, and the thread then frees the model and
    /// ends.
    fn begin_stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
    }

    /// Waits until `deadline` for the worker thread to end and joins it; `true`
    /// when it has ended (or was joined before).
    fn join_until(&self, deadline: Instant) -> bool {
        let Ok(mut worker) = self.worker.lock() else {
            return false;
        };
        let Some(handle) = worker.take() else {
            return true;
        };
        while !handle.is_finished() {
            if Instant::now() >= deadline {
                *worker = Some(handle);
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        handle.join().is_ok()
    }
}

/// Stops every loaded model and joins its thread, waiting at most `grace`: `true`
/// when no model thread is left running (nothing of llama.cpp computes any more),
/// `false` when one is still inside a llama.cpp call after `grace` (a long prompt
/// batch of a large model) or a model is still being loaded.
///
/// Call it before the process exits. After it, the loaded models refuse new work.
/// When it returns `false`, end the process without running static destructors
/// (`_exit`), since llama.cpp's threads may still be running.
pub fn stop_all(grace: Duration) -> bool {
    let deadline = Instant::now() + grace;
    // A load in progress holds the cache's lock; wait for it within the grace.
    let models: Vec<Arc<LoadedModel>> = loop {
        match cache().try_lock() {
            Ok(models) => break models.values().cloned().collect(),
            Err(TryLockError::Poisoned(poisoned)) => {
                break poisoned.into_inner().values().cloned().collect();
            }
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TryLockError::WouldBlock) => return false,
        }
    };
    for model in &models {
        model.begin_stop();
    }
    models.iter().all(|model| model.join_until(deadline))
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
    let stop = Arc::new(AtomicBool::new(false));
    let worker_stop = Arc::clone(&stop);
    let worker = std::thread::Builder::new()
        .name("oxydra-local-model".into())
        .spawn(move || {
            engine::serve(
                backend,
                &worker_path,
                &worker_config,
                &ready_tx,
                &jobs_rx,
                &worker_stop,
            );
        })
        .map_err(|error| LocalError::Load {
            path: path.to_path_buf(),
            message: format!("could not start the model thread: {error}"),
        })?;
    let info = ready_rx.recv().map_err(|_| LocalError::WorkerGone)??;
    Ok(LoadedModel {
        path: path.to_path_buf(),
        info,
        jobs: Mutex::new(Some(jobs_tx)),
        stop,
        worker: Mutex::new(Some(worker)),
    })
}
