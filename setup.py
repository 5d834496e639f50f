"""mlm-garden: lean BERT masked-LM pretraining and fine-tuning with Model Garden's API."""

import setuptools

RUNTIME_REQUIREMENTS = [
    'tensorflow>=2.21,<2.22',
    'tf-keras>=2.21,<2.22',
    'absl-py',
    'pyyaml',
    'numpy',
    'tokenizers',
    'safetensors',
    'tqdm',
]

setuptools.setup(
    name='mlm-garden',
    version='0.1.0',
    description='Lean, fast TensorFlow/Keras framework for BERT-style masked-LM pretraining',
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    packages=setuptools.find_packages(include=[
        'official', 'official.*', 'orbit', 'orbit.*', 'data_tools', 'tensorflow_models',
        'tensorflow_models.*']),
    python_requires='>=3.10',
    install_requires=RUNTIME_REQUIREMENTS,
    extras_require={
        'test': ['pytest>=7', 'pytest-xdist', 'matplotlib', 'gin-config',
                 'scipy>=1.11', 'scikit-learn>=1.4',  # the [eval] extra's
                 'ruff', 'coverage',  # make lint; the suite's line coverage
                 'tensorflow-text>=2.21,<2.22',  # the text layers' tests
                 'sentencepiece',  # test-only: trains the SentencePiece models of the tests
                 'portpicker',  # test-only: Model Garden's base_trainer_test starts a local cluster
                 # test-only: the Hugging Face ModernBERT interop tests run transformers' PyTorch
                 # model; torch's CPU wheel (2.13.0+cpu) comes from pip's find-links, never
                 # PyPI's CUDA build; our runtime code imports neither.
                 'torch==2.13.0', 'transformers==5.24.0',
                 'apache-beam>=2.77,<3'],  # the [beam] extra's: the Beam engine's tests
        # mlm-eval's statistics (scipy's distributions) and simple baselines (scikit-learn).
        'eval': ['scipy>=1.11', 'scikit-learn>=1.4'],
        'gin': ['gin-config'],  # --gin_file / --gin_params
        'plot': ['matplotlib'],
        'text': ['tensorflow-text>=2.21,<2.22'],  # in-graph tokenization: text_layers, serve_text
        'gpu': ['tensorflow[and-cuda]>=2.21,<2.22'],
        # create_pretraining_data --engine=beam (docs/data_at_scale.md); Dataflow and gs:// also
        # need Beam's own gcp extra: pip install 'apache-beam[gcp]'.
        'beam': ['apache-beam>=2.77,<3'],
    },
    entry_points={
        # Modules that register experiments and tasks (exp_factory loads them on first lookup).
        'mlm_garden.experiments': ['nlp = official.common.registry_imports'],
        'console_scripts': [
            'mlm-train=official.nlp.train:run',
            'mlm-create-pretraining-data=data_tools.create_pretraining_data:main',
            'mlm-build-vocab=data_tools.build_vocab:main',
            'mlm-create-finetuning-data=data_tools.create_finetuning_data:main',
            'mlm-convert-checkpoint=official.nlp.tools.convert_checkpoint:main',
            'mlm-export=official.nlp.serving.export_savedmodel:main',
            'mlm-fill-mask=official.nlp.tools.fill_mask:main',
            'mlm-embed=official.nlp.tools.embed:main',
            'mlm-benchmark=official.nlp.tools.benchmark:main',
            'mlm-eval=official.nlp.tools.mlm_eval:main',
            'mlm-pretrain=official.nlp.tools.pretrain:main',
        ],
    },
)
