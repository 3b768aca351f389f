from django import forms


class UploadForm(forms.Form):
    archive = forms.FileField(help_text="A .tar.gz or .zip made by `benchpack registry bundle pack`.")


class RejectForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=4000, strip=True)
